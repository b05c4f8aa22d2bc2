import { Transform } from 'class-transformer';
import { IsBoolean, IsInt, IsOptional, IsString, IsUrl, Max, Min, MinLength } from 'class-validator';
import { toBool, toInt, toList } from '../env-transforms.js';

/** The apps taking Google Play RTDN, how their push tokens are verified, and the Play Developer API that notifications and imports call. */
export class GoogleEnv {
  /** appId:packageName, comma-separated: apps taking Google Play RTDN through Pub/Sub push. */
  @IsOptional()
  @Transform(toList)
  @IsString({ each: true })
  GOOGLE_APPS?: string[];

  /** The audience the Pub/Sub push subscription puts in its OIDC token. */
  @IsOptional()
  @IsString()
  @MinLength(1)
  GOOGLE_PUBSUB_AUDIENCE?: string;

  @IsUrl({ require_tld: false, protocols: ['http', 'https'] })
  GOOGLE_PUBSUB_JWKS_URI = 'https://www.googleapis.com/oauth2/v3/certs';

  @Transform(toList)
  @IsString({ each: true })
  GOOGLE_PUBSUB_ISSUERS = ['https://accounts.google.com', 'accounts.google.com'];

  /** When set, the push token's email must be this service account (the push subscription's). */
  @IsOptional()
  @IsString()
  GOOGLE_PUBSUB_SERVICE_ACCOUNT?: string;

  /** JSON key of the service account allowed to read purchases in Play Console. */
  @IsOptional()
  @IsString()
  GOOGLE_SERVICE_ACCOUNT_FILE?: string;

  @IsUrl({ require_tld: false, protocols: ['http', 'https'] })
  GOOGLE_API_BASE_URL = 'https://androidpublisher.googleapis.com/';

  /** Sign API calls with the service account's own JWT instead of exchanging it for an OAuth token first. */
  @Transform(toBool)
  @IsBoolean()
  GOOGLE_API_SELF_SIGNED_JWT = false;

  /** Seconds between polls of voidedpurchases.list for every GOOGLE_APPS app (refunds Google does not notify); unset: no polling. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(10)
  @Max(86_400)
  GOOGLE_VOIDED_POLL_INTERVAL?: number;
}
