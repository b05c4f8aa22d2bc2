// Which subscriptions the reconciler asks the store about (docs/operations.md, "Reconciliation"),
// decided from the latest row of each subscription. Pure: the selection reads, this decides.

/** The latest row of a subscription (by receipt) as the selection reads it, and when the reconciler last asked the store about it. */
export type SubscriptionHead = {
  receiptId: string;
  platform: string;
  productId: string;
  expirationDate: Date | null;
  gracePeriodExpirationDate: Date | null;
  renewalIntent: string | null;
  isBillingRetryPeriod: boolean | null;
  isPending: boolean | null;
  isExpired: boolean | null;
  isUpgraded: boolean | null;
  revocationDate: Date | null;
  purchaseDate: Date | null;
  firstEventAt: Date;
  /** When the store last vouched for the row shown (the winning event's time). */
  versionTime: Date;
  checkedAt: Date | null;
};

export type SuspicionPolicy = {
  /** RECONCILE_OVERDUE_MARGIN: how long past an expected event nothing may be heard before asking. */
  overdueMarginMs: number;
  /** RECONCILE_CHECK_EVERY: the longest the store may go without vouching for a subscription. */
  checkEveryMs: number;
};

/**
 * Why a subscription is asked about, in the order the passes ask: a renewal overdue, then billing
 * retry or grace past its end and a pending purchase left pending, then the rotating sample.
 */
export type Suspicion = 'renewal_overdue' | 'retry_overdue' | 'pending_overdue' | 'sample';
export const SUSPECT_PHASES: readonly (readonly Suspicion[])[] = [['renewal_overdue'], ['retry_overdue', 'pending_overdue'], ['sample']];

/** Apple retries billing for up to 60 days, Google's grace and account hold last up to 60 days together: a retry longer than this has ended unannounced. */
export const BILLING_RETRY_MS = 60 * 86_400_000;
/** A pending purchase (Google's slow payment methods) settles or is canceled within days; one still pending after this is asked about. */
export const PENDING_MS = 3 * 86_400_000;

const ms = (d: Date | null) => (d === null ? undefined : d.getTime());

/**
 * The rules, in order:
 * 1. Ended for certain (revoked, expired, replaced by an upgrade): never suspect; sampled only while
 *    its access end is within RECONCILE_CHECK_EVERY (a late refund may still come).
 * 2. Asked within the margin: not suspect again yet (a store that still says the same is asked again later).
 * 3. renewal_overdue: set to renew, not in billing retry, its access end (grace end, else expiration)
 *    past by the margin: a renewal, an expiry or a failure should have been heard.
 * 4. retry_overdue: in billing retry with its grace end past by the margin, or its expiration past by
 *    the longest billing retry and the margin.
 * 5. pending_overdue: pending since longer than PENDING_MS.
 * 6. sample: neither a notification, an import nor a check vouched for it within RECONCILE_CHECK_EVERY.
 */
export function suspicion(h: SubscriptionHead, now: number, p: SuspicionPolicy): Suspicion | undefined {
  const accessEnd = ms(h.gracePeriodExpirationDate) ?? ms(h.expirationDate);
  const ended = h.revocationDate !== null || h.isExpired === true || h.isUpgraded === true;
  const vouched = Math.max(h.versionTime.getTime(), ms(h.checkedAt) ?? 0);
  const stale = vouched < now - p.checkEveryMs;
  if (ended) return stale && accessEnd !== undefined && accessEnd >= now - p.checkEveryMs ? 'sample' : undefined;
  const askedLately = h.checkedAt !== null && h.checkedAt.getTime() > now - p.overdueMarginMs;
  if (!askedLately) {
    const overdue = (at: number | undefined, after = 0) => at !== undefined && at + after < now - p.overdueMarginMs;
    if (h.isPending === true) {
      if ((ms(h.purchaseDate) ?? h.firstEventAt.getTime()) < now - PENDING_MS) return 'pending_overdue';
    } else if (h.isBillingRetryPeriod === true) {
      if (overdue(ms(h.gracePeriodExpirationDate)) || overdue(ms(h.expirationDate), BILLING_RETRY_MS)) return 'retry_overdue';
    } else if (h.renewalIntent === 'Renew' && overdue(accessEnd)) return 'renewal_overdue';
  }
  return stale ? 'sample' : undefined;
}
