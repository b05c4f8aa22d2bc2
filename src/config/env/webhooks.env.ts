import { Transform } from 'class-transformer';
import { IsBoolean, IsInt, IsOptional, IsString, Max, Min } from 'class-validator';
import { toBool, toDurationMs, toInt, toList } from '../env-transforms.js';

/** How this instance sends webhooks; WEBHOOK_ALLOW_HOSTS is read by the CLI too (`webhooks add`). */
export class WebhooksEnv {
  /** This instance sends webhooks (any number of instances may: deliveries are claimed in PostgreSQL). */
  @Transform(toBool)
  @IsBoolean()
  WEBHOOK_DELIVERY_ENABLED = true;

  /** How long a change is retried, and how long an endpoint may fail before it is disabled. */
  @Transform(toDurationMs)
  @IsInt({ message: 'WEBHOOK_MAX_AGE must be a duration such as 24h, 90m, 30s or 500ms' })
  @Min(1000)
  @Max(30 * 86_400_000)
  WEBHOOK_MAX_AGE = 86_400_000;

  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(120_000)
  WEBHOOK_TIMEOUT_MS = 10_000;

  /** First retry delay; each further one doubles (up to an hour), with jitter. */
  @Transform(toInt)
  @IsInt()
  @Min(10)
  @Max(3_600_000)
  WEBHOOK_RETRY_BASE_MS = 5_000;

  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(256)
  WEBHOOK_MAX_IN_FLIGHT = 16;

  @Transform(toInt)
  @IsInt()
  @Min(10)
  @Max(60_000)
  WEBHOOK_POLL_MS = 500;

  /** Hosts a webhook may be sent to although they are (or resolve to) internal addresses, and over plain http. */
  @IsOptional()
  @Transform(toList)
  @IsString({ each: true })
  WEBHOOK_ALLOW_HOSTS?: string[];
}
