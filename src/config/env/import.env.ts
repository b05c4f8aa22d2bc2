import { Transform } from 'class-transformer';
import { IsInt, IsOptional, IsString, IsUrl, Max, Min } from 'class-validator';
import { toInt, toList } from '../env-transforms.js';

/** What `import` calls the stores with (the apps themselves are APPLE_APPS and GOOGLE_APPS). */
export class ImportEnv {
  /** appId:issuerId:keyId:path-to-.p8, comma-separated: In-App Purchase keys `import apple` calls the App Store Server API with. */
  @IsOptional()
  @Transform(toList)
  @IsString({ each: true })
  APPLE_API_KEYS?: string[];

  /** The App Store Server API's address for every app (tests: a loopback mock); unset: Apple's, by each app's environment. */
  @IsOptional()
  @IsUrl({ require_tld: false, protocols: ['http', 'https'] })
  APPLE_API_BASE_URL?: string;

  /** Store requests `import` keeps in flight at once. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(64)
  IMPORT_CONCURRENCY = 4;
}
