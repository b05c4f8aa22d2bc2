import { Transform } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { toDurationMs, toInt } from '../env-transforms.js';

/** The reconciler: asking the stores about subscriptions whose state the notifications may have missed (docs/operations.md, "Reconciliation"). */
export class ReconcileEnv {
  /**
   * How often one instance runs a suspect pass for every app with store API credentials ("1h");
   * unset: no scheduled pass, `reconcile` runs only when an operator runs it.
   */
  @IsOptional()
  @Transform(toDurationMs)
  @IsInt({ message: 'RECONCILE_INTERVAL must be a duration such as 1h, 30m or 1d' })
  @Min(60_000)
  @Max(7 * 86_400_000)
  RECONCILE_INTERVAL?: number;

  /** How long past its access end (or grace end, or expected retry end) a subscription may go unannounced before it is suspect. */
  @Transform(toDurationMs)
  @IsInt({ message: 'RECONCILE_OVERDUE_MARGIN must be a duration such as 1d or 12h' })
  @Min(60_000)
  @Max(30 * 86_400_000)
  RECONCILE_OVERDUE_MARGIN = 86_400_000;

  /** The longest a subscription goes without the store vouching for its state (a notification, an import or a check) before the sample asks. */
  @Transform(toDurationMs)
  @IsInt({ message: 'RECONCILE_CHECK_EVERY must be a duration such as 30d' })
  @Min(3_600_000)
  @Max(365 * 86_400_000)
  RECONCILE_CHECK_EVERY = 30 * 86_400_000;

  /** Subscriptions of the rotating sample asked per app and pass (the suspects are not counted): bounds the store calls a pass makes. */
  @Transform(toInt)
  @IsInt({ message: 'RECONCILE_SAMPLE_SIZE must be a whole number' })
  @Min(0)
  @Max(1_000_000)
  RECONCILE_SAMPLE_SIZE = 2000;
}
