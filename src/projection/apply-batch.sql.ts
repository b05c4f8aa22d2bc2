// The projection's writes, one statement per table. Each takes a JSON array of row images sorted by
// primary key, so concurrent batches lock rows in the same order and cannot deadlock each other.

import { APP_LOCK_SPACE, RECEIPT_LOCK_SPACE } from '../database/advisory-locks.js';
import { converted, dayRates, earns, revenueCellColumns } from '../revenue/revenue-cell.sql.js';
import { iso } from './customer-summary.sql.js';

/**
 * Receipts are locked by hash bucket, never one lock per receipt: stores send events in time order,
 * about one receipt per event, so a 4 MiB fetch named ~7k receipts and two partitions at once
 * overflowed PostgreSQL's shared lock table (max_locks_per_transaction 64 x ~100 backends, issue 20
 * item 11). 64, PostgreSQL's default per-transaction allowance, holds a batch within it whatever its
 * size or order. A bucket stands for every receipt hashed into it, so two batches touching the same
 * receipt still exclude each other; the price is that batches touching different receipts of one
 * bucket wait too. A full fetch touches every bucket, so large batches run from here to their commit
 * one at a time, as the day-count rows they share (same app, same days) already made them.
 */
export const RECEIPT_LOCK_BUCKETS = 64;
/**
 * Applications are locked by hash bucket too, so a batch of many apps takes at most 8 more locks:
 * 64 + 8 + the live-projection lock, a little over the per-transaction allowance, which is an
 * average (the lock table holds max_locks_per_transaction x max_connections entries for all).
 */
export const APP_LOCK_BUCKETS = 8;

const changedAtRate = converted('c', 'r');

export const sql = (schema: string) => ({
  /**
   * Before anything of the applications is read: an erasure is applied while no other batch of its
   * application runs. Erasing locks the customer found by hash and the receipts it owned after the
   * batch's own customers, outside the order every other lock follows, and reads the erasures
   * another batch may be storing; a batch that erases is rare (one request per customer), so it
   * takes its applications' buckets exclusively and every other batch shares them. In bucket order.
   */
  lockApps: `
    SELECT count(CASE WHEN k.erases THEN pg_advisory_xact_lock(${APP_LOCK_SPACE}, k.b) ELSE pg_advisory_xact_lock_shared(${APP_LOCK_SPACE}, k.b) END) FROM (
      SELECT (hashtext('${schema}') & ${~(APP_LOCK_BUCKETS - 1)}) | (hashtext(a) & ${APP_LOCK_BUCKETS - 1}) AS b, bool_or(x) AS erases
      FROM unnest($1::text[], $2::boolean[]) AS u(a, x)
      GROUP BY 1
      ORDER BY 1
    ) k`,

  /** Creates the partition's row if new and locks it: a second consumer of the partition waits here. */
  lockOffset: `
    INSERT INTO ${schema}.projection_offsets AS o (topic, partition, next_offset) VALUES ($1, $2, 0)
    ON CONFLICT (topic, partition) DO UPDATE SET next_offset = o.next_offset
    RETURNING next_offset`,

  /** New rows only; RETURNING says which keys this batch created (counted +1 on their day). */
  insertNewTransactions: `
    INSERT INTO ${schema}.transactions
    SELECT * FROM json_populate_recordset(NULL::${schema}.transactions, $1::json) ORDER BY app_id, transaction_id
    ON CONFLICT (app_id, transaction_id) DO NOTHING
    RETURNING app_id, transaction_id`,

  /**
   * Existing rows the batch touches, locked, with what merging a snapshot into them needs
   * (mergeTransaction: version, content digest, provenance) and the receipt and day they are filed under now.
   */
  lockTransactions: `
    SELECT t.app_id, t.transaction_id, t.receipt_id, t.version_id,
           ${iso('t.version_time')} AS version_time, ${iso('t.first_event_at')} AS first_event_at,
           t.snapshot_digest, t.state_event_id, t.state_source, ${iso('t.state_received_at')} AS state_received_at,
           ${iso('t.occurred_at')} AS occurred_at, ${iso('t.last_renewal_date')} AS last_renewal_date,
           ${iso('t.renewal_date')} AS renewal_date, ${iso('t.purchase_date')} AS purchase_date,
           t.product_id AS cell_product_id, t.platform AS cell_platform, t.sandbox IS TRUE AS cell_sandbox,
           (SELECT row_to_json(c)::text FROM (SELECT ${revenueCellColumns('t')} WHERE ${earns('t')}) c) AS revenue_cell
    FROM ${schema}.transactions t
    JOIN unnest($1::text[], $2::text[]) AS k(app_id, id) ON t.app_id = k.app_id AND t.transaction_id = k.id
    ORDER BY t.app_id, t.transaction_id FOR UPDATE OF t`,

  /**
   * The whole stored snapshot of rows an incoming snapshot ties with (same time and id: an id reused
   * for other data), in the form snapshotDigest reads: times as the decoder writes them.
   */
  readSnapshots: `
    SELECT t.app_id, t.transaction_id, t.receipt_id, t.purchase_id, t.product_id, t.platform, t.sandbox,
           ${iso('t.purchase_date')} AS purchase_date, ${iso('t.last_renewal_date')} AS last_renewal_date,
           ${iso('t.renewal_date')} AS renewal_date, ${iso('t.expiration_date')} AS expiration_date, t.renewal_intent,
           ${iso('t.renewal_intent_change_date')} AS renewal_intent_change_date, t.snapshot_cancelation_reason,
           t.is_pending, t.is_acknowledged, t.is_consumed, t.is_billing_retry_period, t.is_trial_period, t.is_intro_period,
           t.is_expired, ${iso('t.grace_period_expiration_date')} AS grace_period_expiration_date,
           ${iso('t.revocation_date')} AS revocation_date, t.snapshot_is_upgraded, t.price_consent_status, t.discount_id,
           t.offer_type, t.offer_discount_type, t.offer_period, t.ownership_type, t.quantity, t.amount_usd, t.amount_micros, t.currency,
           t.revocation_type, t.refunded_share::float8 AS refunded_share
    FROM ${schema}.transactions t
    JOIN unnest($1::text[], $2::text[]) AS k(app_id, id) ON t.app_id = k.app_id AND t.transaction_id = k.id`,

  /** Rows whose newest snapshot changed: every column is written from the merged image. */
  overwriteTransactions: `
    UPDATE ${schema}.transactions t SET
      receipt_id = x.receipt_id, purchase_id = x.purchase_id, product_id = x.product_id,
      platform = x.platform, sandbox = x.sandbox, purchase_date = x.purchase_date,
      last_renewal_date = x.last_renewal_date, renewal_date = x.renewal_date,
      expiration_date = x.expiration_date, renewal_intent = x.renewal_intent,
      renewal_intent_change_date = x.renewal_intent_change_date, cancelation_reason = x.cancelation_reason,
      is_pending = x.is_pending, is_acknowledged = x.is_acknowledged, is_consumed = x.is_consumed,
      is_billing_retry_period = x.is_billing_retry_period, is_trial_period = x.is_trial_period,
      is_intro_period = x.is_intro_period, is_expired = x.is_expired,
      grace_period_expiration_date = x.grace_period_expiration_date, revocation_date = x.revocation_date,
      revocation_type = x.revocation_type, refunded_share = x.refunded_share,
      is_upgraded = x.is_upgraded, snapshot_is_upgraded = x.snapshot_is_upgraded,
      snapshot_cancelation_reason = x.snapshot_cancelation_reason,
      price_consent_status = x.price_consent_status, discount_id = x.discount_id,
      offer_type = x.offer_type, offer_discount_type = x.offer_discount_type, offer_period = x.offer_period,
      ownership_type = x.ownership_type,
      quantity = x.quantity, amount_usd = x.amount_usd, amount_micros = x.amount_micros,
      currency = x.currency, occurred_at = x.occurred_at, first_event_at = x.first_event_at,
      version_time = x.version_time, version_id = x.version_id, snapshot_digest = x.snapshot_digest,
      state_event_id = x.state_event_id, state_source = x.state_source, state_received_at = x.state_received_at
    FROM json_populate_recordset(NULL::${schema}.transactions, $1::json) x
    WHERE t.app_id = x.app_id AND t.transaction_id = x.transaction_id`,

  /** A stale snapshot can still be the earliest event, which only moves the date of last resort. */
  setTransactionDates: `
    UPDATE ${schema}.transactions t SET first_event_at = k.first_event_at, occurred_at = k.occurred_at
    FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::timestamptz[]) AS k(app_id, id, first_event_at, occurred_at)
    WHERE t.app_id = k.app_id AND t.transaction_id = k.id`,

  /**
   * Adds a batch's changes to the revenue sums (GET /v2/revenue): the cells of the rows it wrote
   * ($1, $2) as they are now, less their cells before the batch ($3, read with the lock), to the
   * day sums, and the same converted at each day's rate (usd_rate once per day and currency the
   * batch changed) to the USD months (the rates lock held
   * shared, so rates cannot change meanwhile: loading them re-derives months whole). Rows are taken
   * in key order, day sums then months, as the other counts are.
   */
  addRevenueChanges: `
    WITH now AS (
      SELECT ${revenueCellColumns('t')} FROM ${schema}.transactions t
      JOIN unnest($1::text[], $2::text[]) AS k(app_id, id) ON t.app_id = k.app_id AND t.transaction_id = k.id
      WHERE ${earns('t')}),
    before AS (
      SELECT * FROM json_to_recordset($3::json) AS b(app_id text, day date, platform text, product_id text, currency text, after_first_year boolean,
                                                   n int, unpriced int, gross_micros numeric, gross_usd numeric, refund_share numeric)),
    d AS (
      SELECT app_id, day, platform, product_id, currency, after_first_year, sum(s * n) AS n, sum(s * unpriced) AS unpriced,
             sum(s * gross_micros) AS gross_micros, sum(s * gross_micros * refund_share) AS refunded_micros,
             sum(s * gross_usd) AS gross_usd, sum(s * gross_usd * refund_share) AS refunded_usd
      FROM (SELECT 1 AS s, * FROM now UNION ALL SELECT -1, * FROM before) x
      GROUP BY app_id, day, platform, product_id, currency, after_first_year),
    changed AS (SELECT * FROM d WHERE n <> 0 OR unpriced <> 0 OR gross_micros <> 0 OR refunded_micros <> 0 OR gross_usd <> 0 OR refunded_usd <> 0),
    days AS (
      INSERT INTO ${schema}.revenue_day_sums AS r
      SELECT * FROM changed ORDER BY app_id, day, platform, product_id, currency, after_first_year
      ON CONFLICT (app_id, day, platform, product_id, currency, after_first_year) DO UPDATE SET
        n = r.n + excluded.n, unpriced = r.unpriced + excluded.unpriced, gross_micros = r.gross_micros + excluded.gross_micros,
        refunded_micros = r.refunded_micros + excluded.refunded_micros, gross_usd = r.gross_usd + excluded.gross_usd,
        refunded_usd = r.refunded_usd + excluded.refunded_usd
      RETURNING 1)
    INSERT INTO ${schema}.revenue_month_usd AS u
    SELECT c.app_id, date_trunc('month', c.day)::date, c.platform, c.product_id, c.after_first_year, sum(c.n), sum(c.unpriced),
           sum(${changedAtRate.unconverted}), sum(${changedAtRate.grossUsd}), sum(${changedAtRate.refundsUsd})
    FROM changed c
    LEFT JOIN ${dayRates('changed')} r ON r.day = c.day AND r.currency = c.currency
    WHERE (SELECT count(*) FROM days) >= 0
    GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
    ON CONFLICT (app_id, month, platform, product_id, after_first_year) DO UPDATE SET
      n = u.n + excluded.n, unpriced = u.unpriced + excluded.unpriced, unconverted = u.unconverted + excluded.unconverted,
      gross_usd = u.gross_usd + excluded.gross_usd, refunds_usd = u.refunds_usd + excluded.refunds_usd`,

  /**
   * Serialises batches that touch the same receipts (taken in one order, so they wait rather than
   * deadlock). A batch that writes a receipt's transaction and one that links the receipt to a new
   * owner then never both miss each other's change: whichever runs second sees the first committed
   * and refreshes the owner's summary. Advisory locks, so no row is written to take them; at most
   * RECEIPT_LOCK_BUCKETS of them. The schema's hash fills the bits above the bucket, so a rebuild's
   * generation and the live one rarely share a lock; ordered by the lock's own key, two batches take
   * whatever locks they share in the same order even then.
   */
  lockReceiptKeys: `
    SELECT count(pg_advisory_xact_lock(${RECEIPT_LOCK_SPACE}, k.b)) FROM (
      SELECT DISTINCT (hashtext('${schema}') & ${~(RECEIPT_LOCK_BUCKETS - 1)}) | (hashtext(a || chr(1) || r) & ${RECEIPT_LOCK_BUCKETS - 1}) AS b
      FROM unnest($1::text[], $2::text[]) AS x(a, r)
      ORDER BY 1
    ) k`,

  /** Links to receipts not stored yet; RETURNING says which this batch created. */
  insertNewReceipts: `
    INSERT INTO ${schema}.receipts
    SELECT * FROM json_populate_recordset(NULL::${schema}.receipts, $1::json) ORDER BY app_id, receipt_id
    ON CONFLICT (app_id, receipt_id) DO NOTHING
    RETURNING app_id, receipt_id`,

  /**
   * Every stored receipt the batch touches, with its owner and the link that made it so. No row
   * locks: lockReceiptKeys already gives this batch the receipts to itself.
   */
  readReceipts: `
    SELECT r.app_id, r.receipt_id, r.application_username, r.explicit, ${iso('r.version_time')} AS version_time, r.version_id
    FROM ${schema}.receipts r
    JOIN unnest($1::text[], $2::text[]) AS k(app_id, id) ON r.app_id = k.app_id AND r.receipt_id = k.id`,

  /** Links that won against the stored one (linkWins). */
  updateReceipts: `
    UPDATE ${schema}.receipts r SET
      application_username = x.application_username, explicit = x.explicit,
      version_time = x.version_time, version_id = x.version_id
    FROM json_populate_recordset(NULL::${schema}.receipts, $1::json) x
    WHERE r.app_id = x.app_id AND r.receipt_id = x.receipt_id`,

  insertNewCustomers: `
    INSERT INTO ${schema}.customers (app_id, application_username, first_seen_at)
    SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[]) ORDER BY 1, 2
    ON CONFLICT (app_id, application_username) DO NOTHING
    RETURNING app_id, application_username`,

  /** Every customer row the batch changes, locked once and in key order, with its stored summary. */
  lockCustomers: `
    SELECT c.app_id, c.application_username, ${iso('c.first_seen_at')} AS first_seen_at,
           c.transaction_count, ${iso('c.last_purchase_date')} AS last_purchase_date, ${iso('c.expiration_date')} AS expiration_date,
           ${iso('c.last_renewal_date')} AS last_renewal_date, c.renewal_intent,
           c.current_product_id, ${iso('c.grace_from')} AS grace_from, c.billing_retry, c.grants_digest
    FROM ${schema}.customers c
    JOIN unnest($1::text[], $2::text[]) AS k(app_id, name) ON c.app_id = k.app_id AND c.application_username = k.name
    ORDER BY c.app_id, c.application_username FOR UPDATE OF c`,

  /**
   * Customers seen earlier than stored (decided by the caller from the locked rows). The join is on
   * the key alone: with the time comparison in SQL the planner walked customers_page_idx over every
   * later customer of the app for each key (bench/notes.md, projection at 1M).
   */
  lowerFirstSeen: `
    UPDATE ${schema}.customers c SET first_seen_at = k.first_seen_at
    FROM unnest($1::text[], $2::text[], $3::timestamptz[]) AS k(app_id, name, first_seen_at)
    WHERE c.app_id = k.app_id AND c.application_username = k.name`,

  /** DayDelta[] as JSON. */
  dayCounts: (table: 'transaction_day_counts' | 'customer_day_counts') => countStatements(schema, table, { app_id: 'text', day: 'date' }),

  /** FilterCountDelta[] as JSON: one parameter, cheaper to send than six arrays of thousands (a batch in customer order). */
  filterCounts: countStatements(schema, 'transaction_filter_day_counts', {
    app_id: 'text',
    product_id: 'text',
    platform: 'text',
    sandbox: 'boolean',
    day: 'date',
  }),

  /** CustomerCellDelta[] as JSON. */
  customerCells: countStatements(schema, 'customer_end_weeks', {
    app_id: 'text',
    end_day: 'date',
    first_week: 'date',
    product_id: 'text',
    renewal_intent: 'text',
    grace_day: 'date',
    billing_retry: 'boolean',
  }),

  insertDeadLetters: `
    INSERT INTO public.dead_letters (topic, partition, "offset", key, value, code, reason)
    SELECT $1, $2, o, k, v, c, r FROM unnest($3::bigint[], $4::bytea[], $5::bytea[], $6::text[], $7::text[]) AS d(o, k, v, c, r)
    ON CONFLICT (topic, partition, "offset") DO NOTHING`,

  storeOffset: `
    UPDATE ${schema}.projection_offsets
    SET last_message_sha1 = CASE WHEN $3 >= next_offset THEN $4::bytea ELSE last_message_sha1 END,
        next_offset = GREATEST(next_offset, $3), updated_at = now()
    WHERE topic = $1 AND partition = $2`,
});

/** The two statements that keep a table of counts: `add` sums JSON deltas `{ ...key, n }` into it, `dropEmpty` removes the given keys' rows left at zero. */
export type CountStatements = { add: string; dropEmpty: string };

/**
 * `key` is the table's primary key, column to type, in key order: deltas are upserted in that
 * order, the lock order concurrent batches share. A row whose last customer or transaction moved
 * away is removed, as a from-scratch projection would never write it.
 */
function countStatements(schema: string, table: string, key: Record<string, string>): CountStatements {
  const columns = Object.keys(key);
  const list = columns.join(', ');
  const recordset = (extra: string) =>
    `json_to_recordset($1::json) AS k(${Object.entries(key)
      .map(([c, t]) => `${c} ${t}`)
      .join(', ')}${extra})`;
  return {
    add: `
    INSERT INTO ${schema}.${table} AS d (${list}, n)
    SELECT ${list}, n FROM ${recordset(', n bigint')}
    ORDER BY ${columns.map((_, i) => i + 1).join(', ')}
    ON CONFLICT (${list}) DO UPDATE SET n = d.n + excluded.n`,
    dropEmpty: `
    DELETE FROM ${schema}.${table} d USING ${recordset('')}
    WHERE (${columns.map((c) => `d.${c}`).join(', ')}) = (${columns.map((c) => `k.${c}`).join(', ')}) AND d.n = 0`,
  };
}
