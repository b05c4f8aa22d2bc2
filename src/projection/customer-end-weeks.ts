import type { CustomerChange, PlacedFacts } from './customer-status-days.js';
import { tally, utcDay } from './day-counts.js';

/**
 * Where a customer with an access end is counted for the expiry bounds' pages (customer_end_weeks):
 * the UTC day its access ends and the UTC week (from Monday, as PostgreSQL's date_trunc('week'))
 * it was first seen in. An expiry bound is a range of access ends, so a page's start week is a sum
 * of these cells; a customer without an access end matches no bound and is not counted.
 */
export type EndWeek = { end_day: string; first_week: string };
export type EndWeekDelta = EndWeek & { app_id: string; n: number };

const DAY_MS = 86_400_000;

/** The Monday of a UTC day's week, YYYY-MM-DD. */
export function weekOf(day: string): string {
  const t = Date.parse(`${day}T00:00:00.000Z`);
  const fromMonday = (new Date(t).getUTCDay() + 6) % 7;
  return utcDay(new Date(t - fromMonday * DAY_MS));
}

export const endWeekOf = (f: PlacedFacts): EndWeek | undefined =>
  f.expirationDate === null ? undefined : { end_day: utcDay(f.expirationDate), first_week: weekOf(f.firstSeenDay) };

/**
 * Changes to customer_end_weeks from the same changes customer_status_days takes: a customer
 * inserted, deleted, renewed (its access end moved) or found seen earlier moves between cells.
 * Unordered: the statement that stores them orders the rows it locks.
 */
export function endWeekDeltas(changes: readonly CustomerChange[]): EndWeekDelta[] {
  const deltas = tally<EndWeek & { app_id: string }>();
  for (const { app_id, before, after } of changes) {
    const from = before && endWeekOf(before);
    const to = after && endWeekOf(after);
    if (from) deltas.add({ app_id, ...from }, -1);
    if (to) deltas.add({ app_id, ...to }, 1);
  }
  return deltas.changes();
}

/** The SQL of endWeekOf over a customers row: first_week, end_day (rows without an access end are left out by the caller). */
export const END_WEEK_COLUMNS = `date_trunc('week', first_seen_at AT TIME ZONE 'UTC')::date, (expiration_date AT TIME ZONE 'UTC')::date`;

/** The cells of every customer of `schema`, counted again from the rows. */
export const recountEndWeeksSql = (schema: string) => [
  `DELETE FROM ${schema}.customer_end_weeks`,
  `INSERT INTO ${schema}.customer_end_weeks (app_id, first_week, end_day, n)
   SELECT app_id, ${END_WEEK_COLUMNS}, count(*) FROM ${schema}.customers WHERE expiration_date IS NOT NULL GROUP BY 1, 2, 3`,
];
