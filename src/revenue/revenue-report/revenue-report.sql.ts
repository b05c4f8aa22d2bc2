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

const GROUP_KEY = { day: `s.day::text`, product: `s.product_id`, platform: `s.platform` } as const;

/**
 * What the days [$2, $3) earned, from the kept sums (read_model.revenue_day_sums), per group and,
 * within it, per store and commission tier (proceeds are taken off in TypeScript from the
 * STORE_COMMISSION rates): amounts in buyer currencies converted at each day's rates
 * (public.usd_rates, computed once per day and currency), the producer's own USD as sent. A sum in
 * a currency without a rate that day is left out and its rows counted as unconverted.
 */
export function revenueReportSql(q: RevenueReportQuery): { name: string; sql: string; params: unknown[] } {
  const key = q.groupBy ? GROUP_KEY[q.groupBy] : 'NULL::text';
  const sql = `
    SELECT ${key} AS key, s.platform, s.after_first_year, sum(s.n)::text AS n, sum(s.unpriced)::text AS unpriced,
           sum(CASE WHEN s.currency <> '' AND r.usd IS NULL THEN s.n ELSE 0 END)::text AS unconverted,
           (sum(s.gross_usd) + coalesce(sum(s.gross_micros / 1000000 * r.usd), 0))::text AS gross_usd,
           (sum(s.refunded_usd) + coalesce(sum(s.refunded_micros / 1000000 * r.usd), 0))::text AS refunds_usd
    FROM read_model.revenue_day_sums s
    LEFT JOIN public.usd_rates($2::date, $3::date) r ON r.day = s.day AND r.currency = s.currency
    WHERE s.app_id = $1 AND s.day >= $2::date AND s.day < $3::date
    GROUP BY 1, 2, 3
    ORDER BY 1, 2, 3`;
  return { name: `revenue-report:${q.groupBy ?? 'total'}`, sql, params: [q.appId, q.startDay, q.endDay] };
}
