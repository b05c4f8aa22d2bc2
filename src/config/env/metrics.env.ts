import { Transform } from 'class-transformer';
import { IsBoolean } from 'class-validator';
import { toBool } from '../env-transforms.js';

export class MetricsEnv {
  /** /metrics is unauthenticated: series per application (tenant id in an `app` label) only when this is true. */
  @Transform(toBool)
  @IsBoolean()
  METRICS_PER_APP = false;
}
