import { createHash } from 'node:crypto';
import { byteOrder } from '../common/byte-order.js';
import { customerStatus } from './customer-status.js';
import {
  grantingTransactions,
  isReplaced,
  latestCandidate,
  replacements,
  subscriptionFacts,
  type LifecycleTransaction,
  type SubscriptionCandidate,
} from './customer-summary.js';
import type { EntitlementInfo } from './customer.schema.js';

// customerInfo.entitlements (docs/entitlements.md, "What grants an entitlement"), decided when a
// customer is read, at the request's instant, from the customer's transactions and the current
// definitions. Nothing here is a rule of its own about access: a subscription grants an
// entitlement exactly while the lifecycle rules give it access (subscriptionCandidates, accessEnd),
// and whether that access is active, in grace or in billing retry is customerStatus over the same
// facts the customer row keeps for its current subscription (subscriptionFacts).

/** A transaction as the entitlements read it: the lifecycle facts and what the entry shows besides. */
export type EntitlementTransaction = LifecycleTransaction & {
  purchaseDate: string | null;
  renewalDate: string | null;
  /** The store says the purchase was consumed (a consumable): it never grants. */
  isConsumed: boolean | null;
  /**
   * What its own snapshot says of a replacement, as opposed to isUpgraded and cancelationReason as
   * shown, which also mark a transaction another one of its subscription replaced (rule 2).
   */
  snapshotIsUpgraded: boolean | null;
  snapshotCancelationReason: string | null;
};

/**
 * What customerEntitlements reads of one transaction, hashed to 64 bits: every field it reads, the
 * snapshot's time only as a rule reads it (the end of a purchase the store says expired, when
 * earlier than its expiration), so a newer snapshot saying the same moves nobody. A customer's
 * `grantsDigest` is the sum of these over the transactions it owns, so it changes when anything its
 * entitlements could show changes, under any definitions, and a batch that only adds transactions
 * adds theirs to the stored sum without reading the others.
 */
export function grantFactsHash(t: EntitlementTransaction): bigint {
  const read = [
    t.transactionId,
    t.receiptId,
    t.purchaseId,
    t.productId,
    t.transactionDate,
    // the rules read the snapshot's time only as the end of a purchase the store says expired
    t.isExpired !== true ? null : t.expirationDate !== null && t.expirationDate < t.snapshotTime ? t.expirationDate : t.snapshotTime,
    t.expirationDate,
    t.gracePeriodExpirationDate,
    t.revocationDate,
    t.isPending,
    t.isUpgraded,
    t.isExpired,
    t.isBillingRetryPeriod,
    t.cancelationReason,
    t.lastRenewalDate,
    t.renewalIntent,
    t.purchaseDate,
    t.renewalDate,
    t.isConsumed,
    t.snapshotIsUpgraded,
    t.snapshotCancelationReason,
  ];
  return createHash('sha256').update(JSON.stringify(read)).digest().readBigUInt64BE(0);
}

/** `stored` plus the hashes of `transactions`, as PostgreSQL's bigint (a sum modulo 2^64, signed). */
export function grantsDigest(transactions: Iterable<EntitlementTransaction>, stored = 0n): bigint {
  let sum = stored;
  for (const t of transactions) sum += grantFactsHash(t);
  return BigInt.asIntN(64, sum);
}

/** Which entitlements a product grants under the current definitions (none: []). */
export type Grants = (productId: string) => readonly string[];

/** Sorts after every date (dates are normalised UTC text, `0001-...` to `9999-...`): a lifetime purchase never ends. */
const FOREVER = '~';

type Candidate = SubscriptionCandidate & { transaction: EntitlementTransaction; lifetime: boolean };

/**
 * 1. An auto-renewable subscription grants while it gives access under the lifecycle rules: the
 *    candidates the current subscription is chosen among (pending ones grant nothing; replaced ones
 *    only when every subscription transaction is replaced), until their access end (grace included,
 *    cut short by a refund, a revocation or a replacement).
 * 2. A purchase without expirationDate that the store does not say was consumed (a non-consumable)
 *    grants for good, unless refunded or revoked: then until its revocationDate.
 * 3. Consumables (isConsumed) and pending purchases never grant.
 * Per entitlement, the entry describes the granting transaction that gives access now with the
 * latest access end (a lifetime purchase first), else the one whose access ended last.
 */
export function customerEntitlements(transactions: readonly EntitlementTransaction[], grants: Grants, now: Date): EntitlementInfo[] {
  const subscriptions = grantingTransactions(transactions) as Candidate[];
  const live = subscriptions.filter((c) => !c.replaced);
  const replacedWithin = replacements(transactions);
  const starts = subscriptionStarts(transactions);
  const candidates: Candidate[] = [
    ...subscriptions.map((c) => ({ ...supersededAt(c, live, replacedWithin, starts), lifetime: false })),
    ...transactions
      .filter((t) => t.isPending !== true && t.expirationDate === null && t.isConsumed !== true)
      // A one-time purchase the store says expired without a revocation (Google's cancelled purchase) ends when the snapshot said so.
      .map((t) => ({ transaction: t, accessEnd: t.revocationDate ?? (t.isExpired === true ? t.snapshotTime : FOREVER), replaced: false, lifetime: true })),
  ];
  const byEntitlement = new Map<string, Candidate[]>();
  for (const c of candidates) {
    for (const name of grants(c.transaction.productId)) {
      const list = byEntitlement.get(name) ?? [];
      byEntitlement.set(name, list);
      list.push(c);
    }
  }
  return [...byEntitlement.entries()]
    .sort(([a], [b]) => byteOrder(a, b))
    .map(([identifier, list]) => {
      const active = list.filter((c) => isActive(c, now));
      return entry(identifier, latestCandidate(active.length > 0 ? active : list) as Candidate, now);
    });
}

/**
 * Each subscription counts for what it grants, on its own: a transaction replaced by its own flags
 * alone (its snapshot's isUpgraded or System.Replaced; one that another transaction of its
 * subscription replaced already ends there, rule 2) grants until its access end, cut short when a
 * subscription that is not replaced started after it (its replacement: a Google upgrade is a new
 * purchase token, linked only by the old one's flag). A subscription (receipt and purchase) starts
 * at the earliest purchaseDate, else transaction date, of its transactions: Google's renewal orders
 * carry no purchaseDate, and the renewal of an unrelated, older subscription does not take the grant
 * away. What it granted stays listed, held and ended, after the upgrade.
 */
function supersededAt(
  c: Candidate,
  live: readonly Candidate[],
  replacedWithin: ReadonlyMap<LifecycleTransaction, string>,
  starts: ReadonlyMap<string, string>,
): Candidate {
  const own = c.transaction;
  if (replacedWithin.has(own) || !isReplaced({ isUpgraded: own.snapshotIsUpgraded, cancelationReason: own.snapshotCancelationReason })) return c;
  let next: string | undefined;
  for (const l of live) {
    const start = starts.get(subscriptionOf(l.transaction))!;
    if (start > own.transactionDate && (next === undefined || start < next)) next = start;
  }
  return next !== undefined && next < c.accessEnd ? { ...c, accessEnd: next } : c;
}

const subscriptionOf = (t: LifecycleTransaction) => `${t.receiptId}\u0000${t.purchaseId}`;

/** When each subscription (receipt and purchase) began: the earliest purchaseDate, else transaction date, of its transactions. */
function subscriptionStarts(transactions: readonly EntitlementTransaction[]): Map<string, string> {
  const starts = new Map<string, string>();
  for (const t of transactions) {
    const start = t.purchaseDate ?? t.transactionDate;
    const key = subscriptionOf(t);
    const known = starts.get(key);
    if (known === undefined || start < known) starts.set(key, start);
  }
  return starts;
}

/** Access now, as activeSubscriber decides it: the access end, at millisecond precision, is after the instant. */
const isActive = (c: Candidate, now: Date) => c.accessEnd === FOREVER || new Date(c.accessEnd).getTime() > now.getTime();

function entry(identifier: string, c: Candidate, now: Date): EntitlementInfo {
  const t = c.transaction;
  const info: EntitlementInfo = {
    identifier,
    isActive: false,
    productId: t.productId,
    transactionId: t.transactionId,
    isInGracePeriod: false,
    isInBillingRetry: false,
  };
  if (c.lifetime) {
    info.isActive = isActive(c, now);
    if (c.accessEnd !== FOREVER) info.expirationDate = new Date(c.accessEnd);
  } else {
    const facts = subscriptionFacts(c);
    const status = customerStatus(
      {
        expirationDate: facts.expirationDate === null ? null : new Date(facts.expirationDate),
        graceFrom: facts.graceFrom === null ? null : new Date(facts.graceFrom),
        billingRetry: facts.billingRetry,
      },
      now,
    );
    info.isActive = status === 'active' || status === 'grace_period';
    info.isInGracePeriod = status === 'grace_period';
    info.isInBillingRetry = status === 'billing_retry';
    info.expirationDate = new Date(c.accessEnd);
  }
  if (t.purchaseDate !== null) info.purchaseDate = new Date(t.purchaseDate);
  if (t.lastRenewalDate !== null) info.lastRenewalDate = new Date(t.lastRenewalDate);
  if (t.renewalDate !== null) info.renewalDate = new Date(t.renewalDate);
  if (t.renewalIntent !== null) info.renewalIntent = t.renewalIntent;
  return info;
}
