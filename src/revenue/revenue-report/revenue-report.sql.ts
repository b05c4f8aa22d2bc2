import { converted, dayRates } from '../revenue-cell.sql.js';
import type { RevenueReportQuery } from './revenue-report.query.js';

export type RevenuePartRow = {
  key: string | null;
  platform: string;
  after_first_year: boolean;
  n: string;
  unpriced: string;
  unconverted: string;
  gross_usd: string;
  refunds_usd: string;
};

const KEY = {
  day: { month: `u.month::text`, day: `s.day::text` },
  product: { month: `u.product_id`, day: `s.product_id` },
  platform: { month: `u.platform`, day: `s.platform` },
} as const;

const firstOfMonth = (day: string) => `${day.slice(0, 7)}-01`;
const nextMonth = (first: string) => {
  const d = new Date(`${first}T00:00:00Z`);
  d.setUTCMonth(d.getUTCMonth() + 1);
  return d.toISOString().slice(0, 10);
};

/**
 * Where the report's period is read from: its whole months from the USD months
 * (read_model.revenue_month_usd, a row per month, store, product and tier), the days before the
 * first and after the last whole month from the day sums, converted here at each day's rates. Per
 * day, every day comes from the day sums.
 */
export function reportParts(q: RevenueReportQuery): { before: [string, string]; months: [string, string]; after: [string, string] } {
  const first = q.startDay === firstOfMonth(q.startDay) ? q.startDay : nextMonth(firstOfMonth(q.startDay));
  const last = firstOfMonth(q.endDay);
  if (q.groupBy === 'day' || first >= last) return { before: [q.startDay, q.endDay], months: [q.endDay, q.endDay], after: [q.endDay, q.endDay] };
  return { before: [q.startDay, first], months: [first, last], after: [last, q.endDay] };
}

/**
 * What the days [start, end) earned per group and, within it, per store and commission tier
 * (proceeds are taken off in TypeScript from the STORE_COMMISSION rates), converting the edge days
 * once per day and currency (public.usd_rate). A day sum in a currency
 * without a rate that day is left out and its rows counted as unconverted.
 */
export function revenueReportSql(q: RevenueReportQuery): { name: string; sql: string; params: unknown[] } {
  const key = q.groupBy ? KEY[q.groupBy] : { month: 'NULL::text', day: 'NULL::text' };
  const { before, months, after } = reportParts(q);
  const atRate = converted('s', 'r');
  const sql = `
    WITH edges AS MATERIALIZED (
      SELECT * FROM read_model.revenue_day_sums s
      WHERE s.app_id = $1 AND ((s.day >= $2::date AND s.day < $3::date) OR (s.day >= $6::date AND s.day < $7::date))),
    r AS MATERIALIZED ${dayRates('edges')}
    SELECT key, platform, after_first_year, sum(n)::text AS n, sum(unpriced)::text AS unpriced, sum(unconverted)::text AS unconverted,
           sum(gross)::text AS gross_usd, sum(refunds)::text AS refunds_usd
    FROM (
      SELECT ${key.month} AS key, u.platform, u.after_first_year, u.n, u.unpriced, u.unconverted, u.gross_usd AS gross, u.refunds_usd AS refunds
      FROM read_model.revenue_month_usd u
      WHERE u.app_id = $1 AND u.month >= $4::date AND u.month < $5::date
      UNION ALL
      SELECT ${key.day}, s.platform, s.after_first_year, s.n, s.unpriced, ${atRate.unconverted}, ${atRate.grossUsd}, ${atRate.refundsUsd}
      FROM edges s
      LEFT JOIN r ON r.day = s.day AND r.currency = s.currency
    ) x
    GROUP BY 1, 2, 3
    ORDER BY 1, 2, 3`;
  return { name: `revenue-report:${q.groupBy ?? 'total'}`, sql, params: [q.appId, ...before, ...months, ...after] };
}
