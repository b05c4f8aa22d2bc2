import type { StoredCustomerFacts } from '../customer-info.js';
import type { ListCustomersQuery } from './list-customers.query.js';

/** A customer row: its name, receipts and the kept summary facts customerInfo is derived from. */
export type CustomerRow = StoredCustomerFacts & { applicationUsername: string; receiptIds: string[] };

export const CUSTOMER_COLUMNS = `application_username AS "applicationUsername", receipt_ids AS "receiptIds",
       transaction_count AS "transactionCount", last_purchase_date AS "lastPurchaseDate",
       expiration_date AS "expirationDate", last_renewal_date AS "lastRenewalDate",
       renewal_intent AS "renewalIntent"`;

export type PageStartRow = { total: string | null; day: string | null; before: string | null };

/**
 * Total customers and the first-seen day holding row `skip` (with the rows before it), from the
 * exact per-day counts the projection maintains. One row comes back.
 */
export const customerPageStartSql = `
  WITH c AS (SELECT day, n, sum(n) OVER (ORDER BY day) AS cum FROM read_model.customer_day_counts WHERE app_id = $1)
  SELECT (SELECT sum(n) FROM c)::text AS total, p.day::text AS day, (p.cum - p.n)::text AS before
  FROM (SELECT 1) one LEFT JOIN LATERAL (SELECT day, n, cum FROM c WHERE cum > $2 ORDER BY day LIMIT 1) p ON true`;

/**
 * One page of customers by (first_seen_at, application_username), starting `offset` rows into the
 * day the page begins in. The summary columns are kept by the projection: one indexed read.
 */
export function customerPageSql(q: ListCustomersQuery, from: Date, offset: number): { sql: string; params: unknown[] } {
  return {
    sql: `SELECT ${CUSTOMER_COLUMNS} FROM read_model.customers
          WHERE app_id = $1 AND first_seen_at >= $2
          ORDER BY first_seen_at, application_username OFFSET $3 LIMIT $4`,
    params: [q.appId, from, offset, q.limit],
  };
}

/** The named customers that exist, in the listing's order. */
export function customersByNameSql(q: ListCustomersQuery): { sql: string; params: unknown[] } {
  return {
    sql: `SELECT ${CUSTOMER_COLUMNS} FROM read_model.customers
          WHERE app_id = $1 AND application_username = ANY($2::text[])
          ORDER BY first_seen_at, application_username`,
    params: [q.appId, q.usernames],
  };
}
