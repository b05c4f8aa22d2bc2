// What a transaction row earned, as SQL expressions over a row of read_model.transactions: the one
// place the revenue rules live (docs/revenue.md). The Transaction row's USD fields and the kept
// per-day sums behind GET /v2/revenue both read them, so a row and the report cannot disagree.

/** When the row's money was charged: the renewal it records, else the purchase. */
export const chargedAt = (t: string) => `coalesce(${t}.last_renewal_date, ${t}.purchase_date, ${t}.occurred_at)`;

/**
 * A subscription charge after the subscriber's first year, where a store's reduced commission
 * applies (Apple: 15% after one year of paid service, estimated from the original purchase date).
 */
export const afterFirstYear = (t: string) =>
  `(${t}.expiration_date IS NOT NULL AND ${t}.purchase_date IS NOT NULL AND ${chargedAt(t)} >= ${t}.purchase_date + interval '1 year')`;

/**
 * The share of the amount the store gave back: none unless revoked; a family member losing shared
 * access, or an upgrade's credit the store does not size, gives nothing back; otherwise the share
 * the store reported (a partial refund), else all of it.
 */
export const refundShare = (t: string) =>
  `(CASE WHEN ${t}.revocation_date IS NULL OR ${t}.revocation_type = 'FAMILY_REVOKE' OR (${t}.snapshot_is_upgraded IS TRUE AND ${t}.revocation_type IS NULL) THEN 0
        ELSE coalesce(${t}.refunded_share, 1) END)`;

/** The amount in USD: the producer's own, else the stored amount at its charge day's rate (public.usd_amount). */
export const amountUsd = (t: string) => `coalesce(${t}.amount_usd::numeric, public.usd_amount(${t}.amount_micros, ${t}.currency, ${chargedAt(t)}))`;

/** Rows that are money: production, not pending, not a family member's shared access (its buyer's row counts). */
export const earns = (t: string) => `(${t}.sandbox IS NOT TRUE AND ${t}.is_pending IS NOT TRUE AND ${t}.ownership_type IS DISTINCT FROM 'FAMILY_SHARED')`;

/**
 * The cell of read_model.revenue_day_sums a row of `t` adds to, and what it adds: an amount in USD
 * the producer sent is summed apart (currency ''), an amount in the buyer's currency is summed per
 * currency and converted when the report is read, and a row with neither counts as unpriced.
 */
export const revenueCellColumns = (t: string) => `${t}.app_id, (${chargedAt(t)} AT TIME ZONE 'UTC')::date AS day, ${t}.platform, ${t}.product_id,
  CASE WHEN ${t}.amount_usd IS NULL AND ${t}.amount_micros IS NOT NULL AND ${t}.currency IS NOT NULL THEN ${t}.currency ELSE '' END AS currency,
  ${afterFirstYear(t)} AS after_first_year,
  1 AS n,
  CASE WHEN ${t}.amount_usd IS NULL AND (${t}.amount_micros IS NULL OR ${t}.currency IS NULL) THEN 1 ELSE 0 END AS unpriced,
  CASE WHEN ${t}.amount_usd IS NULL AND ${t}.currency IS NOT NULL THEN coalesce(${t}.amount_micros, 0) ELSE 0 END::numeric AS gross_micros,
  coalesce(${t}.amount_usd, 0)::numeric AS gross_usd,
  ${refundShare(t)} AS refund_share`;

/**
 * Each day and currency of the day sums `from` at its rate, once per pair (public.usd_rate, two
 * index look-ups): join it as `r` on day and currency for the conversions below.
 */
export const dayRates = (from: string) =>
  `(SELECT p.day, p.currency, public.usd_rate(p.currency, p.day) AS usd FROM (SELECT DISTINCT day, currency FROM ${from} WHERE currency <> '') p)`;

/** A day sum `s` at its day's rate `r` (dayRates): its rows without a rate, its gross and its refunds in USD. */
export const converted = (s: string, r: string) => ({
  unconverted: `CASE WHEN ${s}.currency <> '' AND ${r}.usd IS NULL THEN ${s}.n ELSE 0 END`,
  grossUsd: `${s}.gross_usd + coalesce(${s}.gross_micros / 1000000 * ${r}.usd, 0)`,
  refundsUsd: `${s}.refunded_usd + coalesce(${s}.refunded_micros / 1000000 * ${r}.usd, 0)`,
});
