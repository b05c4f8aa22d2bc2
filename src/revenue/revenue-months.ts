import type { EntityManager } from 'typeorm';
import { revenueMonthsSql } from './revenue-months.sql.js';

/** The first day of a UTC day's month, YYYY-MM-01. */
export const monthOf = (day: string): string => `${day.slice(0, 7)}-01`;

/**
 * Re-derives read_model.revenue_month_usd for these (app, month) pairs from the day sums, in the
 * caller's transaction. `rates`: 'shared' when the day sums changed (a batch), 'held' when the
 * caller already holds the rates exclusively (loading rates).
 */
export async function rederiveMonths(
  m: Pick<EntityManager, 'query'>,
  schema: string,
  months: readonly { app_id: string; month: string }[],
  rates: 'shared' | 'held',
): Promise<void> {
  if (months.length === 0) return;
  const q = revenueMonthsSql(schema);
  const apps = months.map((k) => k.app_id);
  const firsts = months.map((k) => k.month);
  // loading rates holds them exclusively: no batch re-derives meanwhile, so no month locks are needed
  if (rates === 'shared') {
    await m.query(q.shareRates);
    await m.query(q.lockMonths, [apps, firsts]);
  }
  await m.query(q.deleteMonths, [apps, firsts]);
  await m.query(q.deriveMonths, [apps, firsts]);
}

/** After rates for the days [from, to) changed: every month of every app those rates reach (a rate serves the 13 days after it too). */
export async function rederiveMonthsAfterRates(m: Pick<EntityManager, 'query'>, schema: string, from: string, to: string): Promise<number> {
  const reach = new Date(Date.parse(to) + 13 * 86_400_000).toISOString().slice(0, 10);
  const months = (await m.query(revenueMonthsSql(schema).monthsFrom, [from, reach])) as { app_id: string; month: string }[];
  // a month at a time keeps each statement's work bounded whatever the history loaded
  for (let i = 0; i < months.length; i += 50) await rederiveMonths(m, schema, months.slice(i, i + 50), 'held');
  return months.length;
}
