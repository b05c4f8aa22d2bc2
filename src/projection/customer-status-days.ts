import { statusAt, type CustomerStatus } from '../customers/customer-status.js';
import type { CellFacts } from './customer-cells.js';
import { tally } from './day-counts.js';

/**
 * Where a customer is counted for the filtered pages (customer_status_days): its first-seen UTC day
 * (the listing's order), its status at the application's watermark, product and intent. The
 * watermark stands still between sweeps (sweepStatuses), so a summary change moves a customer
 * between these rows and the clock does not; a reader adds the customers whose status changed
 * between the watermark and its instant (docs/api.md, "How the pages stay fast").
 */
export type StatusDay = { first_day: string; status: CustomerStatus; product_id: string; renewal_intent: string };
export type StatusDayDelta = StatusDay & { app_id: string; n: number };

/** A customer's facts and first-seen day, as stored before or after a batch. */
export type PlacedFacts = CellFacts & { firstSeenDay: string };
/** A customer row inserted (no `before`), deleted (no `after`), or given a new summary or first-seen day. */
export type CustomerChange = { app_id: string; before?: PlacedFacts; after?: PlacedFacts };

/**
 * A stored time (YYYY-MM-DDTHH:MM:SS.ffffffZ, as iso() and normalizeTime write it) in epoch
 * microseconds: statuses are placed here as PostgreSQL decides them in the sweep and on the read
 * side, to the microsecond (a Date would drop what lies below the millisecond).
 */
export function epochMicros(time: string): number {
  const fraction = /\.(\d{3})(\d{0,3})/.exec(time);
  return Date.parse(time) * 1000 + (fraction ? Number(fraction[2].padEnd(3, '0')) : 0);
}

/**
 * An application without a watermark row has its customers placed at -infinity (every access end
 * after it): a batch never creates the row, which would hold the app's other batches on its insert
 * until it commits; the next sweep creates it (sweepApp).
 */
export const NO_WATERMARK = -Infinity;

const micros = (time: string | null) => (time === null ? null : epochMicros(time));

export const statusDayOf = (f: PlacedFacts, watermark: number): StatusDay => ({
  first_day: f.firstSeenDay,
  status: statusAt(micros(f.expirationDate), micros(f.graceFrom), f.billingRetry, watermark),
  product_id: f.productId ?? '',
  renewal_intent: f.renewalIntent ?? '',
});

/**
 * Changes to customer_status_days: a customer inserted (no `before`) adds one at its place, one
 * deleted (no `after`) takes one away, one whose summary or first-seen day changed moves when its
 * place does. `watermarks` holds every application's watermark (the batch holds its app lock, so
 * none moves meanwhile; one without is NO_WATERMARK).
 */
export function statusDayDeltas(changes: readonly CustomerChange[], watermarks: ReadonlyMap<string, number>): StatusDayDelta[] {
  const deltas = tally<StatusDay & { app_id: string }>();
  for (const { app_id, before, after } of changes) {
    const watermark = watermarks.get(app_id) ?? NO_WATERMARK;
    if (before) deltas.add({ app_id, ...statusDayOf(before, watermark) }, -1);
    if (after) deltas.add({ app_id, ...statusDayOf(after, watermark) }, 1);
  }
  return deltas.changes();
}

/** An application's watermark in SQL, -infinity without a row (NO_WATERMARK). */
export const watermarkSql = (schema: string, app: string) =>
  `coalesce((SELECT w.at FROM ${schema}.customer_status_watermarks w WHERE w.app_id = ${app}), '-infinity'::timestamptz)`;

/** customerStatus in SQL over a customers row (`c`) at the timestamptz expression `t`; customer-status-days int-spec holds it to customerStatus. */
export const statusAtSql = (t: string) => `(CASE WHEN c.expiration_date IS NULL THEN 'none'
  WHEN c.expiration_date > ${t} THEN (CASE WHEN c.grace_from <= ${t} THEN 'grace_period' ELSE 'active' END)
  WHEN c.billing_retry THEN 'billing_retry' ELSE 'expired' END)`;

/**
 * Customers of app `app` whose status may differ between instants `a` and `b` (either order): their
 * access end or grace start lies between them (customers_access_end_idx, customers_grace_idx).
 */
export const statusMovedSql = (app: string, a: string, b: string) => `c.app_id = ${app} AND (
  (c.expiration_date > least(${a}, ${b}) AND c.expiration_date <= greatest(${a}, ${b}))
  OR (c.grace_from > least(${a}, ${b}) AND c.grace_from <= greatest(${a}, ${b})))`;

/** The cells of every customer of `schema` counted again from the rows, every application's watermark set to the transaction's instant. */
export const recountStatusDaysSql = (schema: string) => [
  `DELETE FROM ${schema}.customer_status_days`,
  `DELETE FROM ${schema}.customer_status_watermarks`,
  `INSERT INTO ${schema}.customer_status_watermarks (app_id, at) SELECT DISTINCT app_id, now() FROM ${schema}.customers`,
  `INSERT INTO ${schema}.customer_status_days (app_id, first_day, status, product_id, renewal_intent, n)
   SELECT c.app_id, (c.first_seen_at AT TIME ZONE 'UTC')::date, ${statusAtSql('now()')}, coalesce(c.current_product_id, ''), coalesce(c.renewal_intent, ''), count(*)
   FROM ${schema}.customers c GROUP BY 1, 2, 3, 4, 5`,
];
