import type { CustomerFacts } from '../customers/customer-summary.js';
import { tally, utcDay } from './day-counts.js';

/**
 * Where a customer is counted for the filters' totals (customer_filter_counts): the values they
 * read, with the access end and grace start as UTC days. No access end is '-infinity' (status
 * none), no grace 'infinity'.
 */
export type CustomerCell = { end_day: string; product_id: string; renewal_intent: string; grace_day: string; billing_retry: boolean };
export type CustomerCellDelta = CustomerCell & { app_id: string; n: number };
export type CellFacts = Pick<CustomerFacts, 'expirationDate' | 'productId' | 'renewalIntent' | 'graceFrom' | 'billingRetry'>;

export const customerCellOf = (f: CellFacts): CustomerCell => ({
  end_day: f.expirationDate === null ? '-infinity' : utcDay(f.expirationDate),
  product_id: f.productId ?? '',
  renewal_intent: f.renewalIntent ?? '',
  grace_day: f.graceFrom === null ? 'infinity' : utcDay(f.graceFrom),
  billing_retry: f.billingRetry,
});

/** A customer row inserted (no `before`), deleted (no `after`) or given a new summary. */
export type CustomerCellChange = { app_id: string; before?: CellFacts; after?: CellFacts };

/**
 * Changes to the cells: a customer row inserted (no `before`) adds one to its cell, one deleted (no
 * `after`) takes one away, a summary stored moves the customer when its cell changes. Unordered: the
 * statement that stores them orders the rows it locks.
 */
export function customerCellDeltas(changes: readonly CustomerCellChange[]): CustomerCellDelta[] {
  const deltas = tally<CustomerCell & { app_id: string }>();
  for (const { app_id, before, after } of changes) {
    if (before) deltas.add({ app_id, ...customerCellOf(before) }, -1);
    if (after) deltas.add({ app_id, ...customerCellOf(after) }, 1);
  }
  return deltas.changes();
}

/** customerCellOf in SQL, over a customers row: end_day, product_id, renewal_intent, grace_day, billing_retry. */
export const CELL_COLUMNS = `coalesce((expiration_date AT TIME ZONE 'UTC')::date, '-infinity'), coalesce(current_product_id, ''),
       coalesce(renewal_intent, ''), coalesce((grace_from AT TIME ZONE 'UTC')::date, 'infinity'), billing_retry`;

/** The cells of every customer of `schema`, counted again from the rows (after summaries are re-derived wholesale). */
export const recountCustomerCellsSql = (schema: string) => [
  `DELETE FROM ${schema}.customer_filter_counts`,
  `INSERT INTO ${schema}.customer_filter_counts (app_id, end_day, product_id, renewal_intent, grace_day, billing_retry, n)
   SELECT app_id, ${CELL_COLUMNS}, count(*) FROM ${schema}.customers GROUP BY 1, 2, 3, 4, 5, 6`,
];
