import { Transform } from 'class-transformer';
import { IsOptional, IsString } from 'class-validator';
import { toList } from '../env-transforms.js';

/** The apps taking App Store Server Notifications, and the roots their signatures are checked against (imports too). */
export class AppleEnv {
  /** Files (DER or PEM) of the roots Apple's signing chains must lead to: Apple's own in production. */
  @IsOptional()
  @Transform(toList)
  @IsString({ each: true })
  APPLE_ROOT_CERTIFICATES?: string[];

  /** appId:bundleId:Production|Sandbox[:appAppleId], comma-separated: apps taking App Store notifications. */
  @IsOptional()
  @Transform(toList)
  @IsString({ each: true })
  APPLE_APPS?: string[];
}
