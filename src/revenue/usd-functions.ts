// The USD conversion the read side applies (docs/revenue.md, "Exchange rates"), declared once as
// database functions so a transaction row, the change feed and the revenue report convert alike.
// The migration that installs them carries its own frozen copy (src/database/functions.ts).

/**
 * USD per unit of each currency, for each day from `from_day` to before `to_day`: the European
 * Central Bank's rates (per euro) of the last business day at or before it with a USD rate, looking
 * back less than 14 days; USD is 1. A currency the bank did not quote that day has no row.
 */
export const USD_RATES_SQL = `
      CREATE OR REPLACE FUNCTION public.usd_rates(from_day date, to_day date) RETURNS TABLE (day date, currency text, usd numeric)
      LANGUAGE sql STABLE PARALLEL SAFE AS $$
        WITH days AS (
          SELECT d::date AS day, (SELECT max(r.day) FROM public.fx_rates r WHERE r.currency = 'USD' AND r.day <= d::date AND r.day > d::date - 14) AS quoted
          FROM generate_series(from_day, to_day - 1, interval '1 day') d)
        SELECT days.day, 'USD', 1::numeric FROM days
        UNION ALL
        SELECT days.day, 'EUR', u.per_eur FROM days JOIN public.fx_rates u ON u.currency = 'USD' AND u.day = days.quoted
        UNION ALL
        SELECT days.day, c.currency, u.per_eur / c.per_eur
        FROM days JOIN public.fx_rates u ON u.currency = 'USD' AND u.day = days.quoted
        JOIN public.fx_rates c ON c.day = days.quoted AND c.currency <> 'USD'
      $$`;

/** USD per unit of `code` on `on_day` (usd_rates); NULL without a rate. */
export const USD_RATE_SQL = `
      CREATE OR REPLACE FUNCTION public.usd_rate(code text, on_day date) RETURNS numeric LANGUAGE sql STABLE PARALLEL SAFE AS $$
        SELECT r.usd FROM public.usd_rates(on_day, on_day + 1) r WHERE r.currency = code
      $$`;

/** An amount in micros of `code`, in USD at the rate of its UTC charge day, rounded to the cent (half away from zero). */
export const USD_AMOUNT_SQL = `
      CREATE OR REPLACE FUNCTION public.usd_amount(micros numeric, code text, charged_at timestamptz) RETURNS numeric LANGUAGE sql STABLE PARALLEL SAFE AS $$
        SELECT round(micros / 1000000 * public.usd_rate(code, (charged_at AT TIME ZONE 'UTC')::date), 2)
      $$`;
