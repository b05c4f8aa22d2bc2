// The rules that decide who is paying, until when (docs/api.md, "Access end" and "customerInfo"),
// in the order the docs list them. The projection fetches a customer's transactions, calls
// summarizeCustomer and stores the result; only activeSubscriber is left to request time.
// Every date is a normalised UTC string (event-time.ts), so string order is time order.

import { byteOrder } from '../common/byte-order.js';

/** What the rules read of one transaction of a receipt the customer owns. */
export type LifecycleTransaction = {
  transactionId: string;
  /** Receipt and purchase (the subscription): a replacement is looked for within the pair. */
  receiptId: string;
  purchaseId: string;
  productId: string;
  /** The transaction date: when it was charged (transactionDate in the projection). */
  transactionDate: string;
  /** `time` of the winning snapshot: when the store last said this. */
  snapshotTime: string;
  expirationDate: string | null;
  gracePeriodExpirationDate: string | null;
  revocationDate: string | null;
  isPending: boolean | null;
  isUpgraded: boolean | null;
  isExpired: boolean | null;
  isBillingRetryPeriod: boolean | null;
  cancelationReason: string | null;
  lastRenewalDate: string | null;
  renewalIntent: string | null;
};

/** The stored summary: everything customerInfo needs except the clock. */
export type CustomerFacts = {
  transactionCount: number;
  lastPurchaseDate: string | null;
  /** Access end of the current subscription; activeSubscriber is `expirationDate > now`. */
  expirationDate: string | null;
  lastRenewalDate: string | null;
  renewalIntent: string | null;
  /** The current subscription's product (the `productId` filter); null without one. */
  productId: string | null;
  /**
   * When the access end comes from a store grace period (rule 4): the transaction's own
   * expirationDate, from which on access lasts only because of the grace period. Null otherwise.
   */
  graceFrom: string | null;
  /** The store still retries billing the current subscription (not revoked, not replaced). */
  billingRetry: boolean;
};

const earlier = (a: string, b: string | null) => (b !== null && b < a ? b : a);

/** Replaced by its own snapshot's say (isUpgraded, System.Replaced); see also `replacements`. */
export function isReplaced(t: Pick<LifecycleTransaction, 'isUpgraded' | 'cancelationReason'>): boolean {
  return t.isUpgraded === true || t.cancelationReason === 'System.Replaced';
}

/**
 * The end a replacement must come before (rule 2): the expiration, cut short by a revocation, or by
 * the store saying it expired. Neither the replaced flags nor a grace period play a part, so the
 * answer is the same before and after the row is marked replaced. Null: the transaction grants nothing.
 */
function paidThrough(t: LifecycleTransaction): string | null {
  if (t.isPending === true || t.expirationDate === null) return null;
  if (t.revocationDate !== null) return earlier(t.expirationDate, t.revocationDate);
  return t.isExpired === true ? earlier(t.expirationDate, t.snapshotTime) : t.expirationDate;
}

/**
 * Rule 2, replacement by another transaction: a subscription transaction is replaced when another
 * transaction of the same receipt and purchase, for a different product, not pending and with an
 * expirationDate, was charged after it and before it was paid through (an upgrade, or a crossgrade
 * that takes effect at once: the store starts the new product's transaction then). The value is
 * when: the earliest such transaction date. A downgrade, taking effect at the renewal, is dated at
 * the old transaction's expiration, so nothing replaces the old one: it simply ends.
 */
export function replacements(transactions: readonly LifecycleTransaction[]): Map<LifecycleTransaction, string> {
  const groups = new Map<string, { t: LifecycleTransaction; end: string }[]>();
  for (const t of transactions) {
    const end = paidThrough(t);
    if (end === null) continue;
    const key = `${t.receiptId}\u0000${t.purchaseId}`;
    let group = groups.get(key);
    if (group === undefined) groups.set(key, (group = []));
    group.push({ t, end });
  }
  const replacedAt = new Map<LifecycleTransaction, string>();
  for (const group of groups.values()) {
    if (group.length < 2) continue;
    for (const { t, end } of group) {
      let at: string | null = null;
      for (const { t: u } of group) {
        if (u.productId === t.productId || u.transactionDate <= t.transactionDate || u.transactionDate >= end) continue;
        if (at === null || u.transactionDate < at) at = u.transactionDate;
      }
      if (at !== null) replacedAt.set(t, at);
    }
  }
  return replacedAt;
}

/**
 * Until when a transaction grants access; null when it never does. The first rule that applies wins.
 * `replacedAt`: when another transaction replaced it (`replacements`), if one did.
 */
export function accessEnd(t: LifecycleTransaction, replacedAt: string | null = null): string | null {
  // 1. pending grants nothing
  if (t.isPending === true) return null;
  // 5 (second half). No expiration: consumables and non-consumables never make a subscriber.
  if (t.expirationDate === null) return null;
  // 2. replaced: its own access end is its expiration, or its revocation or its replacement if earlier
  if (replacedAt !== null) return earlier(earlier(t.expirationDate, t.revocationDate), replacedAt);
  if (isReplaced(t)) return earlier(t.expirationDate, t.revocationDate);
  // 3. revoked; or expired early by the store without a revocation date: at the snapshot saying so
  if (t.revocationDate !== null) return earlier(t.expirationDate, t.revocationDate);
  if (t.isExpired === true) return earlier(t.expirationDate, t.snapshotTime);
  // 4. billing retry with a grace period beyond the expiration
  if (t.isBillingRetryPeriod === true && t.gracePeriodExpirationDate !== null && t.gracePeriodExpirationDate > t.expirationDate) {
    return t.gracePeriodExpirationDate;
  }
  // 5. otherwise the expiration date
  return t.expirationDate;
}

/** A subscription transaction that grants access, until when, and whether it was replaced (rule 2). */
export type SubscriptionCandidate = { transaction: LifecycleTransaction; accessEnd: string; replaced: boolean };

/**
 * The subscription transactions that may be current: the non-pending ones with an access end, the
 * non-replaced ones (by their own flags or by another transaction, rule 2) when there is any, else
 * the replaced ones. currentSubscription picks one of them; entitlements (customer-entitlements.ts)
 * read every one that grants an entitlement.
 */
export function subscriptionCandidates(transactions: readonly LifecycleTransaction[]): SubscriptionCandidate[] {
  const candidates = grantingTransactions(transactions);
  const live = candidates.filter((c) => !c.replaced);
  return live.length > 0 ? live : candidates;
}

/** Every non-pending subscription transaction with an access end (rules 1-5), replaced ones included and marked. */
export function grantingTransactions(transactions: readonly LifecycleTransaction[]): SubscriptionCandidate[] {
  const replacedAt = replacements(transactions);
  return transactions.flatMap((t) => {
    const end = accessEnd(t, replacedAt.get(t) ?? null);
    return end === null ? [] : [{ transaction: t, accessEnd: end, replaced: isReplaced(t) || replacedAt.has(t) }];
  });
}

/** The candidate that ends last (ties: later transaction date, then greater transactionId in byte order). */
export function latestCandidate<C extends SubscriptionCandidate>(pool: readonly C[]): C | undefined {
  let best: C | undefined;
  for (const c of pool) {
    if (!best) best = c;
    else if (c.accessEnd !== best.accessEnd) best = c.accessEnd > best.accessEnd ? c : best;
    else if (c.transaction.transactionDate !== best.transaction.transactionDate)
      best = c.transaction.transactionDate > best.transaction.transactionDate ? c : best;
    else if (byteOrder(c.transaction.transactionId, best.transaction.transactionId) > 0) best = c;
  }
  return best;
}

/**
 * The current subscription: among non-pending subscription transactions, the non-replaced one (by its
 * own flags or by another transaction, rule 2) with the latest access end (ties: later transaction date, then greater transactionId); when every one
 * is replaced, the latest replaced one.
 */
export function currentSubscription(transactions: readonly LifecycleTransaction[]): SubscriptionCandidate | undefined {
  return latestCandidate(subscriptionCandidates(transactions));
}

/** customerInfo's stored part, over the transactions of the receipts the customer owns now. */
export function summarizeCustomer(transactions: readonly LifecycleTransaction[]): CustomerFacts {
  const current = currentSubscription(transactions);
  let lastPurchaseDate: string | null = null;
  for (const t of transactions) {
    if (t.isPending !== true && (lastPurchaseDate === null || t.transactionDate > lastPurchaseDate)) lastPurchaseDate = t.transactionDate;
  }
  return { transactionCount: transactions.length, lastPurchaseDate, ...currentFacts(current) };
}

/** The stored facts of the current subscription (none: nulls), shared by summarizeCustomer and extendSummary. */
function currentFacts(current: SubscriptionCandidate | undefined): Omit<CustomerFacts, 'transactionCount' | 'lastPurchaseDate'> {
  if (current === undefined) return { expirationDate: null, lastRenewalDate: null, renewalIntent: null, productId: null, graceFrom: null, billingRetry: false };
  return subscriptionFacts(current);
}

/**
 * A subscription transaction's facts as the customer row keeps them for its current one: the access
 * end, from when it lasts only by a grace period (rule 4), whether billing is still retried. The
 * status rule (customerStatus) reads these; entitlements read them for every granting transaction.
 */
export function subscriptionFacts(current: SubscriptionCandidate): Omit<CustomerFacts, 'transactionCount' | 'lastPurchaseDate'> {
  const t = current.transaction;
  // Rule 4 decided the access end: not replaced, not revoked nor expired early, grace beyond expiration.
  const inRule4 =
    !current.replaced &&
    t.revocationDate === null &&
    t.isExpired !== true &&
    t.isBillingRetryPeriod === true &&
    t.gracePeriodExpirationDate !== null &&
    t.expirationDate !== null &&
    t.gracePeriodExpirationDate > t.expirationDate;
  return {
    expirationDate: current.accessEnd,
    lastRenewalDate: t.lastRenewalDate,
    renewalIntent: t.renewalIntent,
    productId: t.productId,
    graceFrom: inRule4 ? t.expirationDate : null,
    billingRetry: !current.replaced && t.revocationDate === null && t.isBillingRetryPeriod === true,
  };
}

/**
 * The summary once `added` transactions join those `stored` was derived from, when the stored facts
 * alone decide it; undefined when only the whole list can (the caller then reads it all again).
 * The stored facts do not say whether the current subscription is a replaced one, nor its date and
 * id, so an added transaction decides alone only when it grants nothing, or when it is not replaced,
 * its access ends strictly later than the stored one, and no stored transaction was charged after it
 * (only a later one can replace it, rule 2): then it wins whatever the stored one was.
 * A renewal is that case, so a batch that only adds renewals does not re-read the customer's history.
 */
export function extendSummary(stored: CustomerFacts, added: readonly LifecycleTransaction[]): CustomerFacts | undefined {
  let lastPurchaseDate = stored.lastPurchaseDate;
  for (const t of added) {
    if (t.isPending !== true && (lastPurchaseDate === null || t.transactionDate > lastPurchaseDate)) lastPurchaseDate = t.transactionDate;
  }
  const transactionCount = stored.transactionCount + added.length;
  const best = currentSubscription(added);
  if (best === undefined) return { ...stored, transactionCount, lastPurchaseDate };
  const decides =
    stored.expirationDate === null ||
    (!best.replaced &&
      best.accessEnd > stored.expirationDate &&
      (stored.lastPurchaseDate === null || best.transaction.transactionDate >= stored.lastPurchaseDate));
  if (!decides) return undefined;
  return { transactionCount, lastPurchaseDate, ...currentFacts(best) };
}
