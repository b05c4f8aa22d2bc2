import type { ListTransactionsQuery } from './list-transactions.query.js';

/** One row of the page; `total` repeats on every row and stands alone when the page is empty. */
export type TransactionPageRow = {
  total: string;
  transactionId: string | null;
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

/**
 * Transactions of one app ordered by (occurred_at, transaction_id), the order every page and the
 * date filter share; the total counts the same filtered set.
 */
export function listTransactionsSql(q: ListTransactionsQuery): { sql: string; params: unknown[] } {
  const params: unknown[] = [q.appId];
  let filter = 'app_id = $1';
  if (q.startDate) {
    params.push(q.startDate);
    filter += ` AND occurred_at >= $${params.length}`;
  }
  if (q.endDate) {
    params.push(q.endDate);
    filter += ` AND occurred_at < $${params.length}`;
  }
  params.push(q.skip, q.limit);
  const [skip, limit] = [`$${params.length - 1}`, `$${params.length}`];
  const sql = `
    SELECT c.total, p.*
    FROM (SELECT count(*) AS total FROM read_model.transactions WHERE ${filter}) c
    LEFT JOIN LATERAL (
      SELECT transaction_id AS "transactionId", purchase_id AS "purchaseId", product_id AS "productId",
             platform, receipt_id AS "receiptId", sandbox, purchase_date AS "purchaseDate",
             last_renewal_date AS "lastRenewalDate", renewal_date AS "renewalDate",
             expiration_date AS "expirationDate", renewal_intent AS "renewalIntent",
             renewal_intent_change_date AS "renewalIntentChangeDate", cancelation_reason AS "cancelationReason",
             is_pending AS "isPending", is_acknowledged AS "isAcknowledged", is_consumed AS "isConsumed",
             is_billing_retry_period AS "isBillingRetryPeriod", is_trial_period AS "isTrialPeriod",
             is_intro_period AS "isIntroPeriod", is_expired AS "isExpired",
             price_consent_status AS "priceConsentStatus", discount_id AS "discountId", quantity,
             amount_usd AS "amountUSD", amount_micros AS "amountMicros", currency,
             occurred_at, transaction_id
      FROM read_model.transactions
      WHERE ${filter}
      ORDER BY occurred_at, transaction_id
      OFFSET ${skip} LIMIT ${limit}
    ) p ON true
    ORDER BY p.occurred_at, p.transaction_id`;
  return { sql, params };
}
