import { REVENUE_RATES_LOCK } from '../database/advisory-locks.js';
import { converted, dayRates } from './revenue-cell.sql.js';

/**
 * read_model.revenue_month_usd: per application, month, store, product and commission tier, the
 * day sums converted to USD at each day's rates (public.usd_rate). A batch adds its changes to the
 * day sums converted at the rates loaded now (apply-batch.sql.ts, addRevenueChanges); loading rates
 * re-derives the months they reach whole, so a month always equals converting its day sums now.
 */
const atRate = converted('s', 'r');

export const revenueMonthsSql = (schema: string) => ({
  /** Shared by a batch adding to the months, exclusive while rates load and months are re-derived. */
  shareRates: `SELECT pg_advisory_xact_lock_shared(${REVENUE_RATES_LOCK})`,
  holdRates: `SELECT pg_advisory_xact_lock(${REVENUE_RATES_LOCK})`,

  deleteMonths: `
    DELETE FROM ${schema}.revenue_month_usd u USING unnest($1::text[], $2::date[]) AS k(app_id, month)
    WHERE u.app_id = k.app_id AND u.month = k.month`,

  /** The months ($1 apps, $2 first days) from their day sums, at the rates of their days. */
  deriveMonths: `
    WITH k AS (SELECT DISTINCT app_id, month FROM unnest($1::text[], $2::date[]) AS k(app_id, month)),
    days AS MATERIALIZED (
      SELECT s.*, k.month FROM k JOIN ${schema}.revenue_day_sums s
        ON s.app_id = k.app_id AND s.day >= k.month AND s.day < (k.month + interval '1 month')::date),
    r AS MATERIALIZED ${dayRates('days')}
    INSERT INTO ${schema}.revenue_month_usd
    SELECT s.app_id, s.month, s.platform, s.product_id, s.after_first_year, sum(s.n), sum(s.unpriced),
           sum(${atRate.unconverted}), sum(${atRate.grossUsd}), sum(${atRate.refundsUsd})
    FROM days s LEFT JOIN r ON r.day = s.day AND r.currency = s.currency
    GROUP BY s.app_id, s.month, s.platform, s.product_id, s.after_first_year
    HAVING sum(s.n) <> 0`,

  /** The schemas holding USD months: the live read models and any generation being built (docs/operations.md, "Rebuild"). */
  generations: `
    SELECT table_schema AS schema FROM information_schema.tables
    WHERE table_name = 'revenue_month_usd' AND (table_schema = 'read_model' OR table_schema LIKE 'read\\_model\\_%') ORDER BY 1`,

  /** Every (app, month) holding day sums from $1 on (the days new rates reach), to re-derive. */
  monthsFrom: `
    SELECT DISTINCT app_id, date_trunc('month', day)::date::text AS month FROM ${schema}.revenue_day_sums WHERE day >= $1::date AND day < $2::date
    ORDER BY 2, 1`,
});
