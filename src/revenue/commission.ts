// Proceeds (docs/revenue.md, "Proceeds"): what the publisher keeps after the store's commission,
// an estimate from the operator's per-store, per-app rates (STORE_COMMISSION). Tax is not taken off.

/** A store's commission on a charge, as fractions: standard, and after a subscriber's first year. */
export type CommissionRate = { standard: number; afterFirstYear: number };

/** The rates of one application: per platform, the app's own entry, else every app's, else none (0). */
export type Commission = (appId: string, platform: string) => CommissionRate;

const NO_COMMISSION: CommissionRate = { standard: 0, afterFirstYear: 0 };

/** The stores' published standard rates: Apple 30%, 15% after a subscriber's first year; Google Play 15% on subscriptions. */
export const DEFAULT_COMMISSION = ['apple=30/15', 'google=15'];

/** One STORE_COMMISSION entry: `[appId:]platform=percent[/percentAfterFirstYear]`. */
export const COMMISSION_ENTRY =
  /^(?:(?<app>[^:=\s]+):)?(?<platform>[a-z0-9_-]+)=(?<standard>\d{1,2}(?:\.\d{1,4})?|100)(?:\/(?<after>\d{1,2}(?:\.\d{1,4})?|100))?$/;

/**
 * The rates STORE_COMMISSION gives: `platform=standard[/afterFirstYear]` in percent for every app,
 * `appId:platform=...` for one app. A platform absent from both takes no commission (Stripe's
 * processing fees are not a store's commission: set stripe=... to estimate them).
 */
export function commissionOf(entries: readonly string[]): Commission {
  const byApp = new Map<string, CommissionRate>();
  for (const entry of entries) {
    const m = COMMISSION_ENTRY.exec(entry);
    if (!m?.groups) throw new Error(`STORE_COMMISSION entry ${JSON.stringify(entry)} is not [appId:]platform=percent[/percent]`);
    const standard = Number(m.groups.standard) / 100;
    const afterFirstYear = m.groups.after === undefined ? standard : Number(m.groups.after) / 100;
    byApp.set(`${m.groups.app ?? ''}\u0000${m.groups.platform}`, { standard, afterFirstYear });
  }
  return (appId, platform) => byApp.get(`${appId}\u0000${platform}`) ?? byApp.get(`\u0000${platform}`) ?? NO_COMMISSION;
}

/** Cents, half away from zero, as PostgreSQL's round(numeric, 2) does. */
export const toCents = (usd: number): number => (Math.sign(usd) * Math.round(Math.abs(usd) * 100 + 1e-9)) / 100;

/**
 * A row's proceeds: its amount less what was refunded, less the commission of its tier; in USD
 * (rounded to the cent) and in micros of the buyer's currency. Absent without an amount.
 */
export function proceedsOf(
  rate: CommissionRate,
  row: { amountUSD: number | null; amountMicros: string | null; refundedShare: number | null; afterFirstYear?: boolean | null },
): { proceedsUSD?: number; proceedsMicros?: number } {
  const kept = (1 - (row.refundedShare ?? 0)) * (1 - (row.afterFirstYear ? rate.afterFirstYear : rate.standard));
  const out: { proceedsUSD?: number; proceedsMicros?: number } = {};
  if (row.amountUSD !== null) out.proceedsUSD = toCents(row.amountUSD * kept);
  if (row.amountMicros !== null) out.proceedsMicros = Math.round(Number(row.amountMicros) * kept);
  return out;
}
