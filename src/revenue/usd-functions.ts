// The USD conversion the read side applies (docs/revenue.md, "Exchange rates"), declared once as
// database functions so a transaction row, the change feed and the revenue report convert alike.
// The migration that installs them carries its own frozen copy (src/database/functions.ts).

/**
 * USD per unit of `code` on `on_day`: the European Central Bank's rates (per euro) of the last
 * business day at or before it with a USD rate, looking back less than 14 days; USD is 1. NULL when
 * the bank did not quote the currency that day. Two index look-ups, so callers convert per row or
 * per distinct (day, currency) pair.
 */
export const USD_RATE_SQL = `
      CREATE OR REPLACE FUNCTION public.usd_rate(code text, on_day date) RETURNS numeric LANGUAGE sql STABLE PARALLEL SAFE AS $$
        SELECT CASE
          WHEN code IS NULL OR on_day IS NULL THEN NULL
          WHEN code = 'USD' THEN 1
          ELSE (
            SELECT u.per_eur / CASE WHEN code = 'EUR' THEN 1 ELSE c.per_eur END
            FROM (SELECT r.day, r.per_eur FROM public.fx_rates r
                  WHERE r.currency = 'USD' AND r.day <= on_day AND r.day > on_day - 14
                  ORDER BY r.day DESC LIMIT 1) u
            LEFT JOIN public.fx_rates c ON c.currency = code AND c.day = u.day
            WHERE code = 'EUR' OR c.per_eur IS NOT NULL)
        END
      $$`;

/** An amount in micros of `code`, in USD at the rate of its UTC charge day, rounded to the cent (half away from zero). */
export const USD_AMOUNT_SQL = `
      CREATE OR REPLACE FUNCTION public.usd_amount(micros numeric, code text, charged_at timestamptz) RETURNS numeric LANGUAGE sql STABLE PARALLEL SAFE AS $$
        SELECT round(micros / 1000000 * public.usd_rate(code, (charged_at AT TIME ZONE 'UTC')::date), 2)
      $$`;
