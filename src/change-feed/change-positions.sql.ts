// Change positions: every customer and transaction row carries the id of the last PostgreSQL
// transaction that changed what the API shows of it (docs/change-feed.md). A trigger stamps it, so
// every writer (projection, migrations, rebuild switch) keeps it right without knowing about it.

/** The columns the endpoints show, per table: a write that leaves them alone is not a change. */
export const VISIBLE_COLUMNS = {
  customers: ['receipt_ids', 'transaction_count', 'last_purchase_date', 'expiration_date', 'last_renewal_date', 'renewal_intent'],
  transactions: [
    'receipt_id',
    'purchase_id',
    'product_id',
    'platform',
    'sandbox',
    'purchase_date',
    'last_renewal_date',
    'renewal_date',
    'expiration_date',
    'renewal_intent',
    'renewal_intent_change_date',
    'cancelation_reason',
    'is_pending',
    'is_acknowledged',
    'is_consumed',
    'is_billing_retry_period',
    'is_trial_period',
    'is_intro_period',
    'is_expired',
    'grace_period_expiration_date',
    'revocation_date',
    'is_upgraded',
    'price_consent_status',
    'discount_id',
    'quantity',
    'amount_usd',
    'amount_micros',
    'currency',
    'offer_type',
    'offer_discount_type',
    'offer_period',
    'ownership_type',
    'revocation_type',
    'refunded_share',
    'state_event_id',
    'state_source',
    'state_received_at',
  ],
} as const;
export type FeedTable = keyof typeof VISIBLE_COLUMNS;
export const FEED_TABLES = Object.keys(VISIBLE_COLUMNS) as FeedTable[];

export const KEY_COLUMN: Record<FeedTable, string> = { customers: 'application_username', transactions: 'transaction_id' };

/** The shown columns of `alias` as one row value, to compare two images of a row. */
export const shownRow = (alias: string, table: FeedTable) => `(${VISIBLE_COLUMNS[table].map((c) => `${alias}.${c}`).join(', ')})`;

/**
 * Whether two images of a row show the same. A customer's entitlements are not a column: they are
 * decided at read from its transactions, and its grants_digest stands for what they read, so a
 * change there (a refund of a subscription other than the current one, say) is a change of the
 * customer too. A digest not known on either side (null: a row from before it was kept, or extended
 * from one) does not count: filling it in is no change.
 */
export function sameShown(a: string, b: string, table: FeedTable): string {
  const shown = `${shownRow(a, table)} IS NOT DISTINCT FROM ${shownRow(b, table)}`;
  if (table !== 'customers') return shown;
  return `(${shown} AND (${a}.grants_digest IS NULL OR ${b}.grants_digest IS NULL OR ${a}.grants_digest = ${b}.grants_digest))`;
}

/** This transaction's id as a bigint (xid8 with its epoch: it never wraps). */
export const CURRENT_XID = 'pg_current_xact_id()::text::bigint';
/** Every transaction with a lower id, in any database of the cluster, has ended. */
export const OLDEST_RUNNING = 'pg_snapshot_xmin(pg_current_snapshot())::text::bigint';

/**
 * The feed's high-water mark: every transaction of this database with a lower id has ended, so no
 * row can appear below it any more. Transactions still running in this statement's snapshot hold it
 * back unless their backend is seen in another database (it cannot write here): a busy neighbouring
 * database does not stall the feed. One ended since the snapshot counts as ours, which only waits.
 *
 * On a hot standby (a read replica, docs/scaling.md) the snapshot's running ids are the primary's,
 * tracked from the WAL, but PostgreSQL keeps them all among the sub-transaction ids, which
 * pg_current_snapshot() leaves out: its xip list is always empty there, and xmax would let the feed
 * pass a batch still committing on the primary. Its xmin is right (the oldest id the standby still
 * counts as running, gaps included); it covers every database of the cluster (the standby cannot
 * tell which one a running id writes to), which only waits.
 */
export const HIGH_WATER = `(CASE WHEN pg_is_in_recovery() THEN pg_snapshot_xmin(pg_current_snapshot())::text::bigint ELSE coalesce(
  (SELECT min(x::text::bigint) FROM pg_snapshot_xip(pg_current_snapshot()) x
   WHERE NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.backend_xid = x::xid AND a.datname <> current_database())),
  pg_snapshot_xmax(pg_current_snapshot())::text::bigint) END)`;

/**
 * Live tables stamp a row when it is inserted or its shown columns change. A generation being
 * rebuilt keeps the live row's position when it holds the same shown values, and leaves NULL
 * otherwise (stamped when it is switched in), so a rebuild that changes nothing replays nothing.
 */
export function stampFunctionSql(table: FeedTable): string {
  const key = KEY_COLUMN[table];
  return `
    CREATE OR REPLACE FUNCTION public.stamp_${table}_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_ARGV[0] = 'live' THEN
        IF TG_OP = 'UPDATE' AND ${sameShown('NEW', 'OLD', table)} THEN
          RETURN NEW;
        END IF;
        NEW.change_position := ${CURRENT_XID};
      ELSIF TG_ARGV[0] = 'generation' THEN
        NEW.change_position := (
          SELECT l.change_position FROM read_model.${table} l
          WHERE l.app_id = NEW.app_id AND l.${key} = NEW.${key} AND ${sameShown('l', 'NEW', table)});
      ELSE
        NEW.change_position := NULL;
      END IF;
      RETURN NEW;
    END $$`;
}

export type StampMode = 'live' | 'generation' | 'scratch';

export const installStampTriggerSql = (schema: string, table: FeedTable, mode: StampMode) => `
  CREATE TRIGGER stamp_change BEFORE INSERT OR UPDATE ON ${schema}.${table}
  FOR EACH ROW EXECUTE FUNCTION public.stamp_${table}_change('${mode}')`;

export const dropStampTriggerSql = (schema: string, table: FeedTable) => `DROP TRIGGER IF EXISTS stamp_change ON ${schema}.${table}`;

/**
 * Run in the switch transaction, before the generation becomes `read_model`: rows the rebuild
 * changed (NULL), and rows live changed after the rebuild began that the generation holds
 * differently, get this transaction's position, above every cursor handed out so far. A row live
 * changed and changed back since keeps live's newer position, so no client misses the change back.
 */
export const stampSwitchedSql = (schema: string, table: FeedTable) => {
  const key = KEY_COLUMN[table];
  return {
    rebuilt: `UPDATE ${schema}.${table} SET change_position = ${CURRENT_XID} WHERE change_position IS NULL`,
    /** $1: the high-water mark when the generation was created. */
    changedLive: `UPDATE ${schema}.${table} g
     SET change_position = CASE WHEN NOT ${sameShown('g', 'l', table)} THEN ${CURRENT_XID} ELSE l.change_position END
     FROM (SELECT DISTINCT app_id FROM read_model.${table === 'customers' ? 'customer' : 'transaction'}_day_counts) a
     CROSS JOIN LATERAL (
       SELECT l.* FROM read_model.${table} l WHERE l.app_id = a.app_id AND l.change_position >= $1
     ) l
     WHERE g.app_id = l.app_id AND g.${key} = l.${key}
       AND (NOT ${sameShown('g', 'l', table)} OR g.change_position < l.change_position)`,
  };
};
