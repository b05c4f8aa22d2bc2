import type { StoredCustomerFacts } from '../customer-info.js';
import type { ListCustomersQuery } from './list-customers.query.js';
import { filterConditions } from './customer-filters.js';

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

/** The named customers that exist (and match the filters), in the listing's order. */
export function customersByNameSql(q: ListCustomersQuery, now: Date): { name: string; sql: string; params: unknown[] } {
  const f = filterConditions(q.filters, now, 3);
  return {
    name: `customers-by-name${f.key ? `:${f.key}` : ''}`,
    sql: `SELECT ${CUSTOMER_COLUMNS} FROM read_model.customers
          WHERE app_id = $1 AND application_username = ANY($2::text[])${f.sql}
          ORDER BY first_seen_at, application_username`,
    params: [q.appId, q.usernames, ...f.params],
  };
}

/**
 * A filtered page and its exact total. The total counts the rows the filters qualify on the
 * narrowest index (customers_access_end_idx for status and the expiry bounds: each status is a range
 * of expiration_date around the request's instant; customers_product_idx for productId), so it is
 * exact at the instant asked whatever changed since: nothing time-dependent is stored. The page
 * walks customers_page_idx in the listing's order, keeping the matching rows.
 */
export function filteredCustomersSql(q: ListCustomersQuery, now: Date): { count: { name: string; sql: string; params: unknown[] }; page: { name: string; sql: string; params: unknown[] } } {
  const f = filterConditions(q.filters, now, 2);
  const at = 2 + f.params.length;
  return {
    count: {
      name: `customers-count:${f.key}`,
      sql: `SELECT count(*)::text AS total FROM read_model.customers WHERE app_id = $1${f.sql}`,
      params: [q.appId, ...f.params],
    },
    page: {
      name: `customers-filtered:${f.key}`,
      sql: `SELECT ${CUSTOMER_COLUMNS} FROM read_model.customers
            WHERE app_id = $1${f.sql}
            ORDER BY first_seen_at, application_username OFFSET $${at} LIMIT $${at + 1}`,
      params: [q.appId, ...f.params, q.skip, q.limit],
    },
  };
}
