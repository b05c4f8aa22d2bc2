import { Transform } from 'class-transformer';
import { IsInt, IsOptional, IsString, IsUrl, Matches, Max, Min } from 'class-validator';
import { toDurationMs, toInt, toList } from '../env-transforms.js';

/** The apps taking Stripe webhook events (docs/events/stripe.md). */
export class StripeEnv {
  /**
   * appId:webhookSigningSecret:apiKey, comma-separated: each app's webhook endpoint secret (whsec_...)
   * and the restricted API key the service reads subscriptions with (rk_... or sk_...).
   */
  @IsOptional()
  @Transform(toList)
  @IsString({ each: true })
  STRIPE_APPS?: string[];

  /** The Stripe API's address (tests: a loopback mock). */
  @IsUrl({ require_tld: false, protocols: ['http', 'https'] })
  STRIPE_API_BASE_URL = 'https://api.stripe.com';

  /** The metadata key (on the Checkout Session, the subscription or the customer) that names the app's user. */
  @IsString()
  @Matches(/^[A-Za-z0-9_.-]{1,40}$/, { message: 'STRIPE_USERNAME_METADATA_KEY must be 1-40 letters, digits, _ . or -' })
  STRIPE_USERNAME_METADATA_KEY = 'applicationUsername';

  /**
   * How long a publisher keeps access while Stripe retries a failed renewal (past_due), from the
   * unpaid period's start ("7d"); unset: none, access ends with the paid period.
   */
  @IsOptional()
  @Transform(toDurationMs)
  @IsInt({ message: 'STRIPE_GRACE_PERIOD must be a duration such as 7d or 72h' })
  @Min(0)
  @Max(60 * 86_400_000)
  STRIPE_GRACE_PERIOD?: number;

  /** Seconds a webhook's signed timestamp may be off (Stripe's library default: 300). */
  @Transform(toInt)
  @IsInt()
  @Min(10)
  @Max(3600)
  STRIPE_WEBHOOK_TOLERANCE = 300;
}
