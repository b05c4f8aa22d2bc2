import { Transform } from 'class-transformer';
import { IsBoolean, IsIn, IsOptional } from 'class-validator';
import { toBool } from '../env-transforms.js';

/** The variables that concern the whole service rather than one module: app-config checks the others against them. */
export class AppEnv {
  @IsOptional()
  @IsIn(['development', 'production', 'test'])
  NODE_ENV = 'development';

  /** With NODE_ENV=production, the embedded PostgreSQL and event log are refused unless this is true. */
  @Transform(toBool)
  @IsBoolean()
  ALLOW_EMBEDDED = false;
}
