import type { CustomerFacts } from '../customers/customer-summary.js';
import { tally, utcDay } from './day-counts.js';

/**
 * Where a customer is counted for the filtered customer pages (customer_end_weeks): the values
 * they read, with the access end and grace start as UTC days, and the UTC week (from Monday, as
 * PostgreSQL's date_trunc('week')) the customer was first seen in, where a page starts. No access
 * end is '-infinity' (status none), no grace 'infinity'.
 */
export type CustomerCell = { end_day: string; first_week: string; product_id: string; renewal_intent: string; grace_day: string; billing_retry: boolean };
export type CustomerCellDelta = CustomerCell & { app_id: string; n: number };
export type CellFacts = Pick<CustomerFacts, 'expirationDate' | 'productId' | 'renewalIntent' | 'graceFrom' | 'billingRetry'>;

/** A customer's facts and first-seen day, as stored before or after a batch. */
export type PlacedFacts = CellFacts & { firstSeenDay: string };
/** A customer row inserted (no `before`), deleted (no `after`), or given a new summary or first-seen day. */
export type CustomerChange = { app_id: string; before?: PlacedFacts; after?: PlacedFacts };

const DAY_MS = 86_400_000;

/** The Monday of a UTC day's week, YYYY-MM-DD. */
export function weekOf(day: string): string {
  const t = Date.parse(`${day}T00:00:00.000Z`);
  const fromMonday = (new Date(t).getUTCDay() + 6) % 7;
  return utcDay(new Date(t - fromMonday * DAY_MS));
}

export const customerCellOf = (f: PlacedFacts): CustomerCell => ({
  end_day: f.expirationDate === null ? '-infinity' : utcDay(f.expirationDate),
  first_week: weekOf(f.firstSeenDay),
  product_id: f.productId ?? '',
  renewal_intent: f.renewalIntent ?? '',
  grace_day: f.graceFrom === null ? 'infinity' : utcDay(f.graceFrom),
  billing_retry: f.billingRetry,
});

/**
 * Changes to the cells: a customer row inserted (no `before`) adds one to its cell, one deleted (no
 * `after`) takes one away, a summary stored or an earlier first-seen week moves the customer when
 * its cell changes. Unordered: the statement that stores them orders the rows it locks.
 */
export function customerCellDeltas(changes: readonly CustomerChange[]): CustomerCellDelta[] {
  const deltas = tally<CustomerCell & { app_id: string }>();
  for (const { app_id, before, after } of changes) {
    if (before) deltas.add({ app_id, ...customerCellOf(before) }, -1);
    if (after) deltas.add({ app_id, ...customerCellOf(after) }, 1);
  }
  return deltas.changes();
}

/** customerCellOf in SQL, over a customers row: end_day, first_week, product_id, renewal_intent, grace_day, billing_retry. */
export const CELL_COLUMNS = `coalesce((expiration_date AT TIME ZONE 'UTC')::date, '-infinity'), date_trunc('week', first_seen_at AT TIME ZONE 'UTC')::date,
       coalesce(current_product_id, ''), coalesce(renewal_intent, ''), coalesce((grace_from AT TIME ZONE 'UTC')::date, 'infinity'), billing_retry`;

/** The cells of every customer of `schema`, counted again from the rows (after summaries are re-derived wholesale). */
export const recountCustomerCellsSql = (schema: string) => [
  `DELETE FROM ${schema}.customer_end_weeks`,
  `INSERT INTO ${schema}.customer_end_weeks (app_id, end_day, first_week, product_id, renewal_intent, grace_day, billing_retry, n)
   SELECT app_id, ${CELL_COLUMNS}, count(*) FROM ${schema}.customers GROUP BY 1, 2, 3, 4, 5, 6, 7`,
];
