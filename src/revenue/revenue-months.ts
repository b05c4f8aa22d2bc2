import type { EntityManager } from 'typeorm';
import { revenueMonthsSql } from './revenue-months.sql.js';

/**
 * Re-derives read_model.revenue_month_usd for these (app, month) pairs whole from the day sums, in
 * the caller's transaction, which holds the rates lock exclusively (loading rates): no batch adds
 * to the months meanwhile.
 */
async function rederiveMonths(m: Pick<EntityManager, 'query'>, schema: string, months: readonly { app_id: string; month: string }[]): Promise<void> {
  if (months.length === 0) return;
  const q = revenueMonthsSql(schema);
  const apps = months.map((k) => k.app_id);
  const firsts = months.map((k) => k.month);
  await m.query(q.deleteMonths, [apps, firsts]);
  await m.query(q.deriveMonths, [apps, firsts]);
}

/** Re-derives every month of every app with day sums from `from` (inclusive) to `until` (exclusive); returns how many. */
async function rederiveDays(m: Pick<EntityManager, 'query'>, schema: string, from: string, until: string): Promise<number> {
  const months = (await m.query(revenueMonthsSql(schema).monthsFrom, [from, until])) as { app_id: string; month: string }[];
  // fifty months at a time keep each statement's work bounded whatever the history holds
  for (let i = 0; i < months.length; i += 50) await rederiveMonths(m, schema, months.slice(i, i + 50));
  return months.length;
}

/** After rates for the days from `from` to `last` changed: every month of every app those rates reach (a rate serves the 13 days after it too). */
export async function rederiveMonthsAfterRates(m: Pick<EntityManager, 'query'>, schema: string, from: string, last: string): Promise<number> {
  return rederiveDays(m, schema, from, new Date(Date.parse(last) + 14 * 86_400_000).toISOString().slice(0, 10));
}

/** Every month of the day sums: a rebuild's last step, with the rates lock held shared as a batch holds it. */
export async function deriveAllMonths(m: Pick<EntityManager, 'query'>, schema: string): Promise<void> {
  await rederiveDays(m, schema, '-infinity', 'infinity');
}
