import { afterFirstYear, amountUsd, refundShare } from '../../revenue/revenue-cell.sql.js';
import { dayOf, dayStart, lastDayBefore, nextDayStart } from '../../common/day-index.js';
import type { ListTransactionsQuery } from './list-transactions.query.js';
import { transactionFilterConditions } from './transaction-filters.js';

export type TransactionRow = {
  transactionId: string;
  purchaseId: string;
  productId: string;
  platform: string;
  receiptId: string;
  sandbox: boolean | null;
  purchaseDate: Date | null;
  lastRenewalDate: Date | null;
  renewalDate: Date | null;
  expirationDate: Date | null;
  renewalIntent: string | null;
  renewalIntentChangeDate: Date | null;
  cancelationReason: string | null;
  isPending: boolean | null;
  isAcknowledged: boolean | null;
  isConsumed: boolean | null;
  isBillingRetryPeriod: boolean | null;
  isTrialPeriod: boolean | null;
  isIntroPeriod: boolean | null;
  isExpired: boolean | null;
  gracePeriodExpirationDate: Date | null;
  revocationDate: Date | null;
  isUpgraded: boolean | null;
  priceConsentStatus: string | null;
  discountId: string | null;
  offerType: string | null;
  offerDiscountType: string | null;
  offerPeriod: string | null;
  ownershipType: string | null;
  quantity: number | null;
  amountUSD: number | null;
  amountMicros: string | null;
  currency: string | null;
  revocationType: string | null;
  refundedShare: number | null;
  /** Only in TRANSACTION_COLUMNS: the commission tier (proceeds). */
  afterFirstYear?: boolean | null;
  /** Only in TRANSACTION_COLUMNS: where the row's state came from (toView's provenance). */
  stateSource?: string | null;
  stateEventId?: string | null;
  stateReceivedAt?: Date | null;
};

/**
 * A transaction's stored facts, in the contract's field names, from read_model.transactions `t`:
 * what a store mapping re-publishes (storedTransaction), with the producer's own amountUSD.
 */
const FACT_COLUMNS = `t.transaction_id AS "transactionId", t.purchase_id AS "purchaseId", t.product_id AS "productId",
  t.platform, t.receipt_id AS "receiptId", t.sandbox, t.purchase_date AS "purchaseDate",
  t.last_renewal_date AS "lastRenewalDate", t.renewal_date AS "renewalDate",
  t.expiration_date AS "expirationDate", t.renewal_intent AS "renewalIntent",
  t.renewal_intent_change_date AS "renewalIntentChangeDate", t.cancelation_reason AS "cancelationReason",
  t.is_pending AS "isPending", t.is_acknowledged AS "isAcknowledged", t.is_consumed AS "isConsumed",
  t.is_billing_retry_period AS "isBillingRetryPeriod", t.is_trial_period AS "isTrialPeriod",
  t.is_intro_period AS "isIntroPeriod", t.is_expired AS "isExpired",
  t.grace_period_expiration_date AS "gracePeriodExpirationDate", t.revocation_date AS "revocationDate",
  t.revocation_type AS "revocationType", t.is_upgraded AS "isUpgraded",
  t.price_consent_status AS "priceConsentStatus", t.discount_id AS "discountId", t.quantity,
  t.amount_micros AS "amountMicros", t.currency,
  t.offer_type AS "offerType", t.offer_discount_type AS "offerDiscountType", t.offer_period AS "offerPeriod",
  t.ownership_type AS "ownershipType"`;

export const STORED_TRANSACTION_COLUMNS = `${FACT_COLUMNS}, t.amount_usd AS "amountUSD", t.refunded_share::float8 AS "refundedShare"`;

/**
 * The Transaction row as the API returns it (before toView), from read_model.transactions `t`: the
 * facts, with what is decided when read (docs/revenue.md): amountUSD at the charge day's rate, the
 * share refunded, and whether the charge falls after the subscriber's first year.
 */
export const TRANSACTION_COLUMNS = `${FACT_COLUMNS}, ${amountUsd('t')}::float8 AS "amountUSD",
  CASE WHEN t.revocation_date IS NOT NULL THEN ${refundShare('t')} END::float8 AS "refundedShare",
  ${afterFirstYear('t')} AS "afterFirstYear",
  t.state_source AS "stateSource", t.state_event_id AS "stateEventId", t.state_received_at AS "stateReceivedAt"`;

export type PageStartRow = { total: string | null; day: string | null; before: string | null };

/**
 * Total and where the page starts, from the counts the projection keeps: per day
 * (transaction_day_counts) or, with row filters, per day and filtered values
 * (transaction_filter_day_counts, summed per day). The days of the range are summed (the first and
 * last day minus the rows the date filter cuts off, counted on the index), and a running sum finds
 * the day holding row `skip` and how many rows precede it. One row comes back whatever the range.
 */
export function pageStartSql(q: ListTransactionsQuery): { name: string; sql: string; params: unknown[] } {
  const start = q.startDate;
  const end = q.endDate;
  const startCut = start && start.getTime() !== dayStart(dayOf(start)).getTime();
  const endCut = end && end.getTime() !== dayStart(dayOf(end)).getTime();
  // the counts table and the cut-off counts are both read as `t`, so one set of conditions serves both
  const f = transactionFilterConditions(q.filters, 5);
  const params: unknown[] = [q.appId, q.skip, start ? dayOf(start) : null, end ? lastDayBefore(end) : null, ...f.params];
  const cut = (from: number) =>
    `(SELECT count(*) FROM read_model.transactions t WHERE t.app_id = $1 AND t.occurred_at >= $${from} AND t.occurred_at < $${from + 1}${f.sql})`;
  const head = startCut ? cut(params.length + 1) : '0';
  if (startCut) params.push(dayStart(dayOf(start)), start);
  const tail = endCut ? cut(params.length + 1) : '0';
  if (endCut) params.push(end, nextDayStart(dayOf(end)));
  const days = `($3::date IS NULL OR t.day >= $3::date) AND ($4::date IS NULL OR t.day <= $4::date)`;
  const counted = f.key
    ? `SELECT t.day, sum(t.n) AS n FROM read_model.transaction_filter_day_counts t WHERE t.app_id = $1 AND ${days}${f.sql} GROUP BY t.day`
    : `SELECT t.day, t.n FROM read_model.transaction_day_counts t WHERE t.app_id = $1 AND ${days}`;
  const sql = `
    WITH k AS (${counted}), d AS (
      SELECT day, n - CASE WHEN day = $3::date THEN ${head} ELSE 0 END
                    - CASE WHEN day = $4::date THEN ${tail} ELSE 0 END AS n
      FROM k
    ), c AS (SELECT day, n, sum(n) OVER (ORDER BY day) AS cum FROM d)
    SELECT (SELECT sum(n) FROM d)::text AS total, p.day::text AS day, (p.cum - p.n)::text AS before
    FROM (SELECT 1) one LEFT JOIN LATERAL (SELECT day, n, cum FROM c WHERE cum > $2 ORDER BY day LIMIT 1) p ON true`;
  return { name: `tx-page-start-${startCut ? 's' : ''}${endCut ? 'e' : ''}${f.key ? `:${f.key}` : ''}`, sql, params };
}

/**
 * One page in (occurred_at, transaction_id) order of the rows the row filters keep, starting
 * `offset` such rows into the day the page begins in; the offset is at most one day's rows however
 * deep the page is.
 */
export function transactionPageSql(q: ListTransactionsQuery, from: Date, offset: number): { name: string; sql: string; params: unknown[] } {
  const params: unknown[] = [q.appId, from, offset, q.limit];
  let upper = '';
  if (q.endDate) {
    params.push(q.endDate);
    upper = ` AND t.occurred_at < $5`;
  }
  const f = transactionFilterConditions(q.filters, params.length + 1);
  params.push(...f.params);
  // The OFFSET walks only the index (keys); the 100 rows of the page are then fetched by key.
  const sql = `
    SELECT ${TRANSACTION_COLUMNS}
    FROM (SELECT t.occurred_at AS k_at, t.transaction_id AS k_id FROM read_model.transactions t
          WHERE t.app_id = $1 AND t.occurred_at >= $2${upper}${f.sql}
          ORDER BY t.occurred_at, t.transaction_id OFFSET $3 LIMIT $4) k
    JOIN read_model.transactions t ON t.app_id = $1 AND t.transaction_id = k.k_id
    ORDER BY k.k_at, k.k_id`;
  return { name: `tx-page${upper ? '-e' : ''}${f.key ? `:${f.key}` : ''}`, sql, params };
}

/**
 * A page filtered by a chain id (and the date range, and any other row filter) with its exact total:
 * count(*) over the chain's rows (transactions_purchase_idx), then the page by (occurred_at, transaction_id).
 */
export function filteredTransactionsSql(q: ListTransactionsQuery): {
  count: { name: string; sql: string; params: unknown[] };
  page: { name: string; sql: string; params: unknown[] };
} {
  const f = transactionFilterConditions(q.filters, 2);
  const params: unknown[] = [q.appId, ...f.params];
  let range = '';
  let key = f.key;
  if (q.startDate) {
    params.push(q.startDate);
    range += ` AND t.occurred_at >= $${params.length}`;
    key += 's';
  }
  if (q.endDate) {
    params.push(q.endDate);
    range += ` AND t.occurred_at < $${params.length}`;
    key += 'e';
  }
  const where = `t.app_id = $1${f.sql}${range}`;
  return {
    count: { name: `tx-count:${key}`, sql: `SELECT count(*)::text AS total FROM read_model.transactions t WHERE ${where}`, params },
    page: {
      name: `tx-filtered:${key}`,
      sql: `SELECT ${TRANSACTION_COLUMNS} FROM read_model.transactions t WHERE ${where}
            ORDER BY t.occurred_at, t.transaction_id OFFSET $${params.length + 1} LIMIT $${params.length + 2}`,
      params: [...params, q.skip, q.limit],
    },
  };
}
