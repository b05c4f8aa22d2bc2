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

/** After rates for the days from `from` to `last` changed: every month of every app those rates reach (a rate serves the 13 days after it too). */
export async function rederiveMonthsAfterRates(m: Pick<EntityManager, 'query'>, schema: string, from: string, last: string): Promise<number> {
  const reach = new Date(Date.parse(last) + 14 * 86_400_000).toISOString().slice(0, 10);
  const months = (await m.query(revenueMonthsSql(schema).monthsFrom, [from, reach])) as { app_id: string; month: string }[];
  // a month at a time keeps each statement's work bounded whatever the history loaded
  for (let i = 0; i < months.length; i += 50) await rederiveMonths(m, schema, months.slice(i, i + 50));
  return months.length;
}
