// Every advisory lock key the service takes, in one registry so no two features share a number.
// PostgreSQL keeps one-key (bigint) and two-key (int, int) locks apart; a number here still names
// one lock or one space of locks whatever the form, so pg_locks reads unambiguously by number alone
// (docs/operations.md, "Locks").

/** Session lock, one key: one instance migrates at a time (database/migrate.ts). */
export const MIGRATION_LOCK = 727_001;
/** Transaction lock, one key: shared by every live batch, exclusive while a rebuild switches generations or move-to-kafka switches positions. */
export const LIVE_PROJECTION_LOCK = 727_002;
/** First key of the two-key transaction locks on receipts, by hash bucket (projection/apply-batch.sql.ts). */
export const RECEIPT_LOCK_SPACE = 727_003;
/** First key of the two-key transaction lock that gives one instance an endpoint's queueing at a time (webhooks/webhooks.sql.ts). */
export const WEBHOOK_QUEUE_LOCK_SPACE = 727_004;
/** First key of the two-key transaction locks on applications, by hash bucket: shared by every batch, exclusive for one that erases. */
export const APP_LOCK_SPACE = 727_005;
/** Session lock, one key: one rebuild at a time (operations/rebuild). Was 727_003, the receipts' number, before issue 40. */
export const REBUILD_LOCK = 727_006;
/** Session lock, one key: one Google voided-purchases poller over every instance (the digits of "GVOID"). */
export const GOOGLE_VOIDED_POLL_LOCK = 7_186_073_968;
/** Session lock, one key: one exchange-rate fetcher over every instance (FX_RATES_URL, docs/exchange-rates.md). */
export const FX_RATES_FETCH_LOCK = 7_088_696_766;
/** Transaction lock, one key: shared while a batch or a rebuild adds to the USD months, exclusive while rates load and re-derive them (revenue/revenue-months.ts). */
export const REVENUE_RATES_LOCK = 727_007;
/** Session lock, one key: one scheduled reconciliation pass over every instance (RECONCILE_INTERVAL, docs/operations.md; the digits of "RECON"). */
export const RECONCILE_LOCK = 8_269_677_978;
/** First key of the two-key transaction lock on an application's entitlement definitions (by hashtext of the app id): one writer at a time (entitlements/entitlement-definitions.sql.ts). */
export const ENTITLEMENTS_LOCK_SPACE = 727_008;

export const ADVISORY_LOCKS = {
  MIGRATION_LOCK,
  LIVE_PROJECTION_LOCK,
  RECEIPT_LOCK_SPACE,
  WEBHOOK_QUEUE_LOCK_SPACE,
  APP_LOCK_SPACE,
  REBUILD_LOCK,
  GOOGLE_VOIDED_POLL_LOCK,
  FX_RATES_FETCH_LOCK,
  REVENUE_RATES_LOCK,
  RECONCILE_LOCK,
  ENTITLEMENTS_LOCK_SPACE,
} as const;
