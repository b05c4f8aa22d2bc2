import type { ListCustomersQuery } from './list-customers.query.js';

export type CustomerPageRow = {
  total: number;
  applicationUsername: string | null;
  receiptIds: string[];
  transactionCount: number;
  lastPurchaseDate: Date | null;
  expirationDate: Date | null;
  lastRenewalDate: Date | null;
  renewalIntent: string | null;
  activeUntil: Date | null;
};

/**
 * One page of customers (by first_seen_at, then username) with the facts customerInfo is derived
 * from, aggregated over the transactions of the receipts each customer currently owns.
 */
export function listCustomersSql(q: ListCustomersQuery): { sql: string; params: unknown[] } {
  const params: unknown[] = [q.appId];
  let filter = 'app_id = $1';
  let window = '';
  if (q.usernames) {
    params.push(q.usernames);
    filter += ` AND application_username = ANY($2::text[])`;
  } else {
    params.push(q.skip, q.limit);
    window = 'OFFSET $2 LIMIT $3';
  }
  const sql = `
    SELECT c.total, p.application_username AS "applicationUsername",
           coalesce(r.receipt_ids, '{}') AS "receiptIds",
           coalesce(a.transaction_count, 0) AS "transactionCount",
           a.last_purchase_date AS "lastPurchaseDate", a.active_until AS "activeUntil",
           l.expiration_date AS "expirationDate", l.last_renewal_date AS "lastRenewalDate",
           l.renewal_intent AS "renewalIntent"
    FROM (SELECT count(*)::int AS total FROM read_model.customers WHERE ${filter}) c
    LEFT JOIN LATERAL (
      SELECT application_username, first_seen_at FROM read_model.customers
      WHERE ${filter}
      ORDER BY first_seen_at, application_username
      ${window}
    ) p ON true
    LEFT JOIN LATERAL (
      SELECT array_agg(receipt_id ORDER BY receipt_id) AS receipt_ids
      FROM read_model.receipts WHERE app_id = $1 AND application_username = p.application_username
    ) r ON true
    LEFT JOIN LATERAL (
      SELECT count(*)::int AS transaction_count,
             max(t.purchase_date) AS last_purchase_date,
             max(t.expiration_date) FILTER (WHERE t.is_expired IS NOT TRUE) AS active_until
      FROM read_model.receipts rc
      JOIN read_model.transactions t ON t.app_id = rc.app_id AND t.receipt_id = rc.receipt_id
      WHERE rc.app_id = $1 AND rc.application_username = p.application_username
    ) a ON true
    LEFT JOIN LATERAL (
      SELECT t.expiration_date, t.last_renewal_date, t.renewal_intent
      FROM read_model.receipts rc
      JOIN read_model.transactions t ON t.app_id = rc.app_id AND t.receipt_id = rc.receipt_id
      WHERE rc.app_id = $1 AND rc.application_username = p.application_username AND t.expiration_date IS NOT NULL
      ORDER BY t.expiration_date DESC, t.transaction_id DESC
      LIMIT 1
    ) l ON true
    ORDER BY p.first_seen_at, p.application_username`;
  return { sql, params };
}
