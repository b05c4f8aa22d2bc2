import { dayOf, dayStart, lastDayBefore, nextDayStart } from '../../common/day-index.js';
import type { ListTransactionsQuery } from './list-transactions.query.js';

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
  priceConsentStatus: string | null;
  discountId: string | null;
  quantity: number | null;
  amountUSD: number | null;
  amountMicros: string | null;
  currency: string | null;
};

export type DayCountRow = { kind: 'day' | 'head' | 'tail'; day: string | null; n: number };

/**
 * Exact counts per UTC day of the filtered range, from the counts the projection maintains. The
 * first and last day may be cut by the filter: 'head' counts that day's rows before `startdate`,
 * 'tail' those at or after `enddate`, both on the (app_id, occurred_at) index.
 */
export function transactionDaysSql(q: ListTransactionsQuery): { sql: string; params: unknown[] } {
  const params: unknown[] = [q.appId];
  const parts: string[] = [];
  let dayFilter = '';
  if (q.startDate) {
    params.push(dayOf(q.startDate));
    dayFilter += ` AND day >= $${params.length}::date`;
  }
  if (q.endDate) {
    params.push(lastDayBefore(q.endDate));
    dayFilter += ` AND day <= $${params.length}::date`;
  }
  parts.push(`SELECT 'day' AS kind, day::text AS day, n::int AS n FROM read_model.transaction_day_counts WHERE app_id = $1${dayFilter}`);
  if (q.startDate && q.startDate.getTime() !== dayStart(dayOf(q.startDate)).getTime()) {
    params.push(dayStart(dayOf(q.startDate)), q.startDate);
    parts.push(`SELECT 'head', NULL, count(*)::int FROM read_model.transactions WHERE app_id = $1 AND occurred_at >= $${params.length - 1} AND occurred_at < $${params.length}`);
  }
  if (q.endDate && q.endDate.getTime() !== dayStart(dayOf(q.endDate)).getTime()) {
    params.push(q.endDate, nextDayStart(dayOf(q.endDate)));
    parts.push(`SELECT 'tail', NULL, count(*)::int FROM read_model.transactions WHERE app_id = $1 AND occurred_at >= $${params.length - 1} AND occurred_at < $${params.length}`);
  }
  return { sql: `${parts.join('\nUNION ALL\n')}\nORDER BY 1, 2`, params };
}

/**
 * One page in (occurred_at, transaction_id) order, starting `offset` rows into the day the page
 * begins in; the offset is at most one day's rows however deep the page is.
 */
export function transactionPageSql(q: ListTransactionsQuery, from: Date, offset: number): { sql: string; params: unknown[] } {
  const params: unknown[] = [q.appId, from, offset, q.limit];
  let upper = '';
  if (q.endDate) {
    params.push(q.endDate);
    upper = ` AND occurred_at < $5`;
  }
  const sql = `
    SELECT transaction_id AS "transactionId", purchase_id AS "purchaseId", product_id AS "productId",
           platform, receipt_id AS "receiptId", sandbox, purchase_date AS "purchaseDate",
           last_renewal_date AS "lastRenewalDate", renewal_date AS "renewalDate",
           expiration_date AS "expirationDate", renewal_intent AS "renewalIntent",
           renewal_intent_change_date AS "renewalIntentChangeDate", cancelation_reason AS "cancelationReason",
           is_pending AS "isPending", is_acknowledged AS "isAcknowledged", is_consumed AS "isConsumed",
           is_billing_retry_period AS "isBillingRetryPeriod", is_trial_period AS "isTrialPeriod",
           is_intro_period AS "isIntroPeriod", is_expired AS "isExpired",
           price_consent_status AS "priceConsentStatus", discount_id AS "discountId", quantity,
           amount_usd AS "amountUSD", amount_micros AS "amountMicros", currency
    FROM read_model.transactions
    WHERE app_id = $1 AND occurred_at >= $2${upper}
    ORDER BY occurred_at, transaction_id
    OFFSET $3 LIMIT $4`;
  return { sql, params };
}
