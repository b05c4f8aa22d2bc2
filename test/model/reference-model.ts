// The reference model: the rules of docs/api.md ("Transaction date", "Access end", "customerInfo",
// "Receipt ownership") written again, as plainly as possible, over all events at once. It shares no
// code with src/ (only the JSON it produces is compared), so a wrong rule in the service and a
// wrong rule here would have to be wrong in the same way to go unnoticed.
//
// Events are the raw CloudEvents a producer publishes, in the order the log holds them. Every one
// counts, redeliveries and ids reused for other data too (docs/events/README.md, "Ordering rules"):
// equal versions are ranked by the content digest that section defines, written again here.
//
// Erasure, from docs/privacy.md ("What happens", 4) and docs/api.md: an event naming a username
// dated at or before that username's latest customer.erased names no one. Its link still competes
// for the receipt, but when it wins the receipt has no owner; it is no sighting. Transactions stay.
// A later event naming the same username starts a new customer, first seen then.
//
// Entitlements, from docs/entitlements.md ("On customers", "What grants an entitlement") alone: the
// application's current definitions (set with `define`, removed with `undefine`) read over the
// same owned transactions at the request's instant; see `entitlementsOf`.

import { createHash } from 'node:crypto';

export type RawEvent = {
  specversion: '1.0';
  source: string;
  id: string;
  type: 'transaction.updated' | 'receipt.linked' | 'customer.erased';
  time: string;
  appid: string;
  data: Record<string, unknown>;
};

type Snapshot = { time: number; id: string; data: Record<string, unknown>; tie: string; source?: string };

const ms = (s: unknown) => (typeof s === 'string' ? Date.parse(s) : undefined);
const out = (t: number) => new Date(t).toISOString();

/** Byte order of the UTF-8 encodings, which is how the service breaks ties between ids. */
function compareIds(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** Newest first: later time, then greater id, then (equal versions) the greater tie key. */
function newerFirst(a: { time: number; id: string; tie: string }, b: { time: number; id: string; tie: string }): number {
  if (a.time !== b.time) return b.time - a.time;
  return compareIds(b.id, a.id) || compareIds(b.tie, a.tie);
}

// docs/events/README.md, "Ordering rules": the snapshot's fields in this order, each as a string
// (times in UTC with six fraction digits) or null when absent, as a JSON array, hashed with SHA-256.
const DIGEST_FIELDS = [
  'receiptId',
  'purchaseId',
  'productId',
  'platform',
  'sandbox',
  'purchaseDate',
  'lastRenewalDate',
  'renewalDate',
  'expirationDate',
  'renewalIntent',
  'renewalIntentChangeDate',
  'cancelationReason',
  'isPending',
  'isAcknowledged',
  'isConsumed',
  'isBillingRetryPeriod',
  'isTrialPeriod',
  'isIntroPeriod',
  'isExpired',
  'gracePeriodExpirationDate',
  'revocationDate',
  'isUpgraded',
  'priceConsentStatus',
  'discountId',
  'offerType',
  'offerDiscountType',
  'offerPeriod',
  'ownershipType',
  'quantity',
  'amountUSD',
  'amountMicros',
  'currency',
  'revocationType',
  'refundedShare',
];
const TIME_FIELDS = new Set([
  'purchaseDate',
  'lastRenewalDate',
  'renewalDate',
  'expirationDate',
  'renewalIntentChangeDate',
  'gracePeriodExpirationDate',
  'revocationDate',
]);
const SPELLINGS: Record<string, string> = { amountUSD: 'priceUSD', amountMicros: 'priceMicros' };
function contentDigest(data: Record<string, unknown>): string {
  const values = DIGEST_FIELDS.map((f) => {
    const v = data[f] ?? (SPELLINGS[f] ? data[SPELLINGS[f]] : undefined);
    if (v === undefined || v === null) return null;
    // the generator writes milliseconds: six digits are those and three zeros
    return TIME_FIELDS.has(f) ? new Date(Date.parse(v as string)).toISOString().replace('Z', '000Z') : String(v);
  });
  return createHash('sha256').update(JSON.stringify(values)).digest('hex');
}

type ModelTransaction = {
  app: string;
  transactionId: string;
  date: number;
  snapshotTime: number;
  data: Record<string, unknown>;
  /** The winning event's id and source (provenance). */
  eventId: string;
  source: string;
  /** When another transaction of its subscription replaced it (rule 2), if one did. */
  replacedAt?: number;
};

export type CustomerStatus = 'active' | 'grace_period' | 'billing_retry' | 'expired' | 'none';
export type CustomerFilters = { status?: CustomerStatus[]; renewalIntent?: string; productId?: string; expiresBefore?: string; expiresAfter?: string };
export type CustomersQuery = { skip?: number; limit?: number; usernames?: string[] } & CustomerFilters;
export type TransactionFilters = { transactionId?: string; purchaseId?: string; productId?: string; platform?: string; sandbox?: boolean };
export type TransactionsQuery = { skip?: number; limit?: number; startdate?: string; enddate?: string } & TransactionFilters;

export class ReferenceModel {
  private readonly transactions: ModelTransaction[] = [];
  private readonly owners = new Map<string, string>(); // app \0 receiptId -> username
  private readonly customers = new Map<string, { app: string; name: string; firstSeen: number }>();
  /** Per app, the entitlements defined now: name -> the products that grant it. */
  private readonly definitions = new Map<string, Map<string, string[]>>();

  /** `hash`: the keyed hash of docs/privacy.md, to match erasures that carry usernameHash. */
  constructor(events: readonly RawEvent[], hash?: (app: string, username: string) => string) {
    // the latest erasure per application and name (or hash)
    const erasedUntil = new Map<string, number>();
    for (const e of events) {
      if (e.type !== 'customer.erased') continue;
      const key = e.data.usernameHash !== undefined ? `${e.appid}\u0000#${e.data.usernameHash}` : `${e.appid}\u0000${e.data.applicationUsername}`;
      erasedUntil.set(key, Math.max(erasedUntil.get(key) ?? -Infinity, ms(e.time)!));
    }
    const namesNoOne = (app: string, name: string, time: number) => {
      if (erasedUntil.size === 0) return false;
      const byName = erasedUntil.get(`${app}\u0000${name}`) ?? -Infinity;
      const byHash = hash ? (erasedUntil.get(`${app}\u0000#${hash(app, name)}`) ?? -Infinity) : -Infinity;
      return time <= Math.max(byName, byHash);
    };

    const snapshots = new Map<string, Snapshot[]>();
    const explicitLinks = new Map<string, Snapshot[]>();
    const implicitLinks = new Map<string, Snapshot[]>();
    const push = (map: Map<string, Snapshot[]>, key: string, s: Snapshot) => map.set(key, [...(map.get(key) ?? []), s]);

    for (const e of events) {
      if (e.type === 'customer.erased') continue;
      const s: Snapshot = { time: ms(e.time)!, id: e.id, data: e.data, tie: '', source: e.source };
      const name = e.data.applicationUsername as string | undefined;
      // links of equal versions rank by the username's bytes
      const asLink = { ...s, tie: name ?? '' };
      if (e.type === 'transaction.updated') {
        push(snapshots, `${e.appid}\u0000${e.data.transactionId}`, { ...s, tie: contentDigest(e.data) });
        if (name) push(implicitLinks, `${e.appid}\u0000${e.data.receiptId}`, asLink);
      } else {
        push(explicitLinks, `${e.appid}\u0000${e.data.receiptId}`, asLink);
      }
      if (name && !namesNoOne(e.appid, name, s.time)) {
        const key = `${e.appid}\u0000${name}`;
        const known = this.customers.get(key);
        if (!known || s.time < known.firstSeen) this.customers.set(key, { app: e.appid, name, firstSeen: s.time });
      }
    }

    for (const [key, list] of snapshots) {
      const [app] = key.split('\u0000');
      const winner = [...list].sort(newerFirst)[0];
      const firstEvent = Math.min(...list.map((s) => s.time));
      const d = winner.data;
      const date = ms(d.lastRenewalDate) ?? ms(d.renewalDate) ?? ms(d.purchaseDate) ?? firstEvent;
      // docs/api.md, "Provenance": in arrival order, the snapshot that made the state; a newer one saying the same keeps it
      let best: Snapshot | undefined;
      let state: Snapshot | undefined;
      for (const next of list) {
        if (best !== undefined && newerFirst(next, best) >= 0) continue;
        if (best === undefined || next.tie !== best.tie) state = next;
        best = next;
      }
      this.transactions.push({
        app,
        transactionId: d.transactionId as string,
        date,
        snapshotTime: winner.time,
        data: d,
        eventId: state!.id,
        source: state!.source!,
      });
    }

    // Rule 2: replaced by a later transaction of the same receipt and purchase for another product,
    // charged before this one was paid through (expiration, or revocation, or the store saying expired).
    const paidThrough = (t: ModelTransaction) => {
      const expiration = ms(t.data.expirationDate)!;
      const revocation = ms(t.data.revocationDate);
      if (revocation !== undefined) return Math.min(expiration, revocation);
      return t.data.isExpired === true ? Math.min(expiration, t.snapshotTime) : expiration;
    };
    const grants = (t: ModelTransaction) => t.data.isPending !== true && t.data.expirationDate !== undefined;
    for (const t of this.transactions) {
      if (!grants(t)) continue;
      const replacedBy = this.transactions.filter(
        (u) =>
          grants(u) &&
          u.app === t.app &&
          u.data.receiptId === t.data.receiptId &&
          u.data.purchaseId === t.data.purchaseId &&
          u.data.productId !== t.data.productId &&
          u.date > t.date &&
          u.date < paidThrough(t),
      );
      if (replacedBy.length > 0) t.replacedAt = Math.min(...replacedBy.map((u) => u.date));
    }

    const receipts = new Set([...explicitLinks.keys(), ...implicitLinks.keys()]);
    for (const key of receipts) {
      const explicit = explicitLinks.get(key);
      // the latest receipt.linked; without one, the earliest username carried by a transaction
      const owner = explicit ? [...explicit].sort(newerFirst)[0] : [...implicitLinks.get(key)!].sort(newerFirst).at(-1)!;
      const name = owner.data.applicationUsername as string;
      if (!namesNoOne(key.split('\u0000')[0], name, owner.time)) this.owners.set(key, name);
    }
  }

  transactionsPage(app: string, q: TransactionsQuery) {
    const skip = q.skip ?? 0;
    const limit = q.limit ?? 100;
    const from = q.startdate ? Date.parse(q.startdate) : -Infinity;
    const to = q.enddate ? Date.parse(q.enddate) : Infinity;
    // A chain id: the id as a purchaseId, or the purchaseId of the transaction it names; an id without
    // a `<platform>:` prefix stands for itself under apple: and google: too (docs/api.md).
    const chain = (given: string) => {
      const ids = given.includes(':') ? [given] : [given, `apple:${given}`, `google:${given}`];
      return new Set([...ids, ...this.transactions.filter((t) => t.app === app && ids.includes(t.transactionId)).map((t) => t.data.purchaseId as string)]);
    };
    const chains = [q.transactionId, q.purchaseId].flatMap((id) => (id === undefined ? [] : [chain(id)]));
    const rows = this.transactions
      .filter((t) => t.app === app && t.date >= from && t.date < to)
      .filter((t) => chains.every((c) => c.has(t.data.purchaseId as string)))
      .filter((t) => q.productId === undefined || t.data.productId === q.productId)
      .filter((t) => q.platform === undefined || t.data.platform === q.platform)
      .filter((t) => q.sandbox === undefined || (t.data.sandbox === true) === q.sandbox)
      .sort((a, b) => (a.date !== b.date ? a.date - b.date : compareIds(a.transactionId, b.transactionId)));
    return { rows: rows.slice(skip, skip + limit).map((t) => transactionJson(t)), paging: { skip, limit, total: rows.length } };
  }

  customersPage(app: string, q: CustomersQuery, now: Date) {
    const all = [...this.customers.values()]
      .filter((c) => c.app === app)
      .sort((a, b) => (a.firstSeen !== b.firstSeen ? a.firstSeen - b.firstSeen : compareIds(a.name, b.name)))
      .filter((c) => this.matches(c, q, now));
    if (q.usernames) {
      const rows = all.filter((c) => q.usernames!.includes(c.name));
      return { rows: rows.map((c) => this.customerJson(c, now)), paging: { skip: 0, limit: q.usernames.length, total: rows.length } };
    }
    const skip = q.skip ?? 0;
    const limit = q.limit ?? 100;
    return { rows: all.slice(skip, skip + limit).map((c) => this.customerJson(c, now)), paging: { skip, limit, total: all.length } };
  }

  /** Every access end and grace start of the app's current subscriptions: the instants a status changes. */
  statusInstants(app: string): Date[] {
    const currents = [...this.customers.values()].filter((c) => c.app === app).flatMap((c) => currentOf(this.owned(c)) ?? []);
    // grace starts first: they are rarer than access ends
    const graces = currents.flatMap((t) => graceStart(t) ?? []);
    return [...graces, ...currents.map((t) => accessEnd(t)!)].map((t) => new Date(t));
  }

  /** The app's transaction ids, purchase ids and products, for choosing filter values. */
  transactionValues(app: string) {
    const own = this.transactions.filter((t) => t.app === app);
    return {
      transactionIds: own.map((t) => t.transactionId),
      purchaseIds: own.map((t) => t.data.purchaseId as string),
      productIds: own.map((t) => t.data.productId as string),
      dates: own.map((t) => t.date).sort((a, b) => a - b),
    };
  }

  private matches(c: { app: string; name: string }, q: CustomerFilters, now: Date): boolean {
    const current = currentOf(this.owned(c));
    const end = current ? accessEnd(current) : undefined;
    if (q.status && !q.status.includes(statusOf(current, now))) return false;
    if (q.renewalIntent !== undefined && current?.data.renewalIntent !== q.renewalIntent) return false;
    if (q.productId !== undefined && current?.data.productId !== q.productId) return false;
    if (q.expiresAfter !== undefined && (end === undefined || end < Date.parse(q.expiresAfter))) return false;
    if (q.expiresBefore !== undefined && (end === undefined || end >= Date.parse(q.expiresBefore))) return false;
    return true;
  }

  private owned(c: { app: string; name: string }): ModelTransaction[] {
    const receiptIds = [...this.owners]
      .filter(([key, owner]) => key.startsWith(`${c.app}\u0000`) && owner === c.name)
      .map(([key]) => key.slice(c.app.length + 1));
    return this.transactions.filter((t) => t.app === c.app && receiptIds.includes(t.data.receiptId as string));
  }

  /** PUT /v2/entitlements/{name}: the products listed replace those listed before. */
  define(app: string, name: string, productIds: readonly string[]): void {
    const own = this.definitions.get(app) ?? new Map<string, string[]>();
    own.set(name, [...new Set(productIds)]);
    this.definitions.set(app, own);
  }

  /** DELETE /v2/entitlements/{name}; false when the app defines no such entitlement (404). */
  undefine(app: string, name: string): boolean {
    return this.definitions.get(app)?.delete(name) ?? false;
  }

  /** GET /v2/entitlements: by identifier, products in byte order. */
  entitlementDefinitions(app: string) {
    const own = [...(this.definitions.get(app) ?? new Map<string, string[]>())];
    return {
      entitlements: own.sort(([a], [b]) => compareIds(a, b)).map(([identifier, productIds]) => ({ identifier, productIds: [...productIds].sort(compareIds) })),
    };
  }

  /**
   * Where an entitlement entry of the app's customers may change with the clock alone: the grace
   * starts (first: rarer) and access ends of every transaction of a product defined now.
   */
  entitlementInstants(app: string): Date[] {
    const listed = new Set([...(this.definitions.get(app)?.values() ?? [])].flat());
    const granting = [...this.customers.values()]
      .filter((c) => c.app === app)
      .flatMap((c) => {
        const owned = this.owned(c);
        return owned.filter((t) => listed.has(t.data.productId as string)).map((t) => ({ t, end: entitlementEnd(t, owned) }));
      })
      .filter(({ end }) => end !== undefined);
    const graces = granting.flatMap(({ t }) => graceStart(t) ?? []);
    const ends = granting.flatMap(({ end }) => (end === Infinity ? [] : [end!]));
    return [...new Set([...graces, ...ends])].map((t) => new Date(t));
  }

  customerNames(app: string): string[] {
    return [...this.customers.values()].filter((c) => c.app === app).map((c) => c.name);
  }

  private customerJson(c: { app: string; name: string }, now: Date) {
    const receiptIds = [...this.owners]
      .filter(([key, owner]) => key.startsWith(`${c.app}\u0000`) && owner === c.name)
      .map(([key]) => key.slice(c.app.length + 1))
      .sort(compareIds);
    const owned = this.transactions.filter((t) => t.app === c.app && receiptIds.includes(t.data.receiptId as string));
    const info = customerInfo(owned, now);
    const entitlements = entitlementsOf(owned, this.definitions.get(c.app), now);
    if (entitlements.length > 0) info.entitlements = entitlements;
    return { applicationUsername: c.name, customerInfo: info, receiptIds };
  }
}

const isReplaced = (t: ModelTransaction) => t.replacedAt !== undefined || t.data.isUpgraded === true || t.data.cancelationReason === 'System.Replaced';

/** The access end of one transaction, by the numbered rules; undefined when it grants nothing. */
function accessEnd(t: ModelTransaction): number | undefined {
  const d = t.data;
  const expiration = ms(d.expirationDate);
  const revocation = ms(d.revocationDate);
  const grace = ms(d.gracePeriodExpirationDate);
  if (d.isPending === true) return undefined; // 1
  if (expiration === undefined) return undefined; // 5: consumables, non-consumables
  if (isReplaced(t)) return Math.min(expiration, revocation ?? Infinity, t.replacedAt ?? Infinity); // 2
  if (revocation !== undefined) return Math.min(expiration, revocation); // 3
  if (d.isExpired === true) return Math.min(expiration, t.snapshotTime); // 3
  if (d.isBillingRetryPeriod === true && grace !== undefined && grace > expiration) return grace; // 4
  return expiration; // 5
}

/** The current subscription ("customerInfo" in docs/api.md); undefined when none grants access. */
function currentOf(owned: ModelTransaction[]): ModelTransaction | undefined {
  const subscriptions = owned.filter((t) => accessEnd(t) !== undefined);
  const notReplaced = subscriptions.filter((t) => !isReplaced(t));
  const pool = notReplaced.length > 0 ? notReplaced : subscriptions;
  return [...pool].sort((a, b) => accessEnd(b)! - accessEnd(a)! || b.date - a.date || compareIds(b.transactionId, a.transactionId))[0];
}

/** When access begins to last only by a grace period: rule 4 decided the access end; else undefined. */
function graceStart(t: ModelTransaction): number | undefined {
  const d = t.data;
  const expiration = ms(d.expirationDate)!;
  const grace = ms(d.gracePeriodExpirationDate);
  if (isReplaced(t) || d.revocationDate !== undefined || d.isExpired === true) return undefined;
  return d.isBillingRetryPeriod === true && grace !== undefined && grace > expiration ? expiration : undefined;
}

/**
 * docs/api.md "Customer status": none without a subscription; with access now, grace_period once the
 * subscription's own expiration passed within a grace period, else active; without access,
 * billing_retry while the store retries billing it (not revoked, not replaced), else expired.
 */
function statusOf(current: ModelTransaction | undefined, now: Date): CustomerStatus {
  if (!current) return 'none';
  const t = now.getTime();
  if (accessEnd(current)! > t) {
    const from = graceStart(current);
    return from !== undefined && from <= t ? 'grace_period' : 'active';
  }
  return current.data.isBillingRetryPeriod === true && current.data.revocationDate === undefined && !isReplaced(current) ? 'billing_retry' : 'expired';
}

function customerInfo(owned: ModelTransaction[], now: Date): Record<string, unknown> {
  if (owned.length === 0) return {};
  const current = currentOf(owned);
  const info: Record<string, unknown> = {};
  if (current) {
    info.expirationDate = out(accessEnd(current)!);
    if (current.data.renewalIntent !== undefined) info.renewalIntent = current.data.renewalIntent;
    if (current.data.lastRenewalDate !== undefined) info.lastRenewalDate = out(ms(current.data.lastRenewalDate)!);
  }
  const purchases = owned.filter((t) => t.data.isPending !== true).map((t) => t.date);
  if (purchases.length > 0) info.lastPurchaseDate = out(Math.max(...purchases));
  info.activeSubscriber = current !== undefined && accessEnd(current)! > now.getTime();
  return info;
}

/**
 * docs/entitlements.md, "What grants an entitlement": until when one transaction of a listed
 * product grants what its product grants; undefined when it never grants; Infinity for good.
 * - pending: nothing; said consumed (isConsumed): nothing (a consumable, rule 3);
 * - without expirationDate (a non-consumable, rule 2): for good; refunded or revoked, until its
 *   revocationDate; said expired without a revocation, until the snapshot that said so;
 * - with one (a subscription, rule 1): its access end by the lifecycle rules; one replaced by its
 *   own flags alone (not replaced within its subscription) ends, besides, when a subscription not
 *   replaced started after it (bought, by the earliest purchaseDate of its transactions, after this
 *   one's transaction date), at the earliest such start.
 */
function entitlementEnd(t: ModelTransaction, owned: readonly ModelTransaction[]): number | undefined {
  const d = t.data;
  if (d.isPending === true) return undefined;
  if (d.expirationDate === undefined) {
    if (d.isConsumed === true) return undefined;
    if (d.revocationDate !== undefined) return ms(d.revocationDate)!;
    return d.isExpired === true ? t.snapshotTime : Infinity;
  }
  const end = accessEnd(t)!;
  // replaced within its subscription (rule 2): it ends at that replacement and no earlier
  if (t.replacedAt !== undefined || (d.isUpgraded !== true && d.cancelationReason !== 'System.Replaced')) return end;
  // a subscription (receipt and purchase) starts when it was bought: the earliest purchaseDate (its
  // transaction date when it has none) of its transactions
  const started = (u: ModelTransaction) =>
    Math.min(
      ...owned.filter((w) => w.data.receiptId === u.data.receiptId && w.data.purchaseId === u.data.purchaseId).map((w) => ms(w.data.purchaseDate) ?? w.date),
    );
  const laterStarts = owned.filter((u) => accessEnd(u) !== undefined && !isReplaced(u) && started(u) > t.date).map(started);
  return Math.min(end, ...laterStarts);
}

/**
 * customerInfo.entitlements: per entitlement defined now (byte order of the names) that a
 * transaction the customer owns ever granted, the entry of rule 5: the granting transaction giving
 * access now with the latest access end (a lifetime first), else the one whose access ended last;
 * ties: later transaction date, then greater transactionId.
 */
function entitlementsOf(owned: readonly ModelTransaction[], defined: Map<string, string[]> | undefined, now: Date): Record<string, unknown>[] {
  if (!defined) return [];
  const at = now.getTime();
  const granting = owned.flatMap((t) => {
    const end = entitlementEnd(t, owned);
    return end === undefined ? [] : [{ t, end }];
  });
  return [...defined]
    .sort(([a], [b]) => compareIds(a, b))
    .flatMap(([identifier, productIds]) => {
      const chosen = granting
        .filter(({ t }) => productIds.includes(t.data.productId as string))
        .sort((a, b) => (a.end !== b.end ? (b.end > a.end ? 1 : -1) : b.t.date - a.t.date || compareIds(b.t.transactionId, a.t.transactionId)))[0];
      if (!chosen) return [];
      const { t, end } = chosen;
      const d = t.data;
      const entry: Record<string, unknown> = { identifier, isActive: end > at };
      if (end !== Infinity) entry.expirationDate = out(end);
      entry.productId = d.productId;
      entry.transactionId = t.transactionId;
      for (const f of ['purchaseDate', 'lastRenewalDate', 'renewalDate'] as const) if (d[f] !== undefined) entry[f] = out(ms(d[f])!);
      if (d.renewalIntent !== undefined) entry.renewalIntent = d.renewalIntent;
      const status = statusOver(t, end, now);
      entry.isInGracePeriod = status === 'grace_period';
      entry.isInBillingRetry = status === 'billing_retry';
      return [entry];
    });
}

/** docs/api.md "Customer status" over one transaction whose access ends at `end` (not 'none': it granted). */
function statusOver(t: ModelTransaction, end: number, now: Date): CustomerStatus {
  const at = now.getTime();
  if (end > at) {
    const from = graceStart(t);
    return from !== undefined && from <= at ? 'grace_period' : 'active';
  }
  return t.data.isBillingRetryPeriod === true && t.data.revocationDate === undefined && !isReplaced(t) ? 'billing_retry' : 'expired';
}

const DATE_FIELDS = new Set([
  'purchaseDate',
  'lastRenewalDate',
  'renewalDate',
  'expirationDate',
  'renewalIntentChangeDate',
  'gracePeriodExpirationDate',
  'revocationDate',
]);
const ROW_FIELDS = [
  'transactionId',
  'purchaseId',
  'productId',
  'platform',
  'receiptId',
  'sandbox',
  'purchaseDate',
  'lastRenewalDate',
  'renewalDate',
  'expirationDate',
  'renewalIntent',
  'renewalIntentChangeDate',
  'cancelationReason',
  'isPending',
  'isAcknowledged',
  'isConsumed',
  'isBillingRetryPeriod',
  'isTrialPeriod',
  'isIntroPeriod',
  'isExpired',
  'gracePeriodExpirationDate',
  'revocationDate',
  'isUpgraded',
  'priceConsentStatus',
  'discountId',
  'quantity',
  'currency',
  'revocationType',
];

/**
 * A transaction row as docs/api.md describes it: present fields only, both amount spellings; one
 * another transaction replaced shows isUpgraded and System.Replaced.
 */
function transactionJson(t: ModelTransaction): Record<string, unknown> {
  const d = t.replacedAt === undefined ? t.data : { ...t.data, isUpgraded: true, cancelationReason: 'System.Replaced' };
  const row: Record<string, unknown> = {};
  for (const f of ROW_FIELDS) {
    if (d[f] === undefined) continue;
    row[f] = DATE_FIELDS.has(f) ? out(ms(d[f])!) : d[f];
  }
  const micros = (d.amountMicros ?? d.priceMicros) as number | undefined;
  if (micros !== undefined) row.amountMicros = row.priceMicros = micros;
  // docs/revenue.md: the producer's USD, else the amount at the charge day's rate, to the cent
  const chargedAt = ms(d.lastRenewalDate) ?? ms(d.purchaseDate) ?? t.date;
  const usd = (d.amountUSD ?? d.priceUSD) as number | undefined;
  const rate = typeof d.currency === 'string' ? usdPerUnit(rates, d.currency, chargedAt) : undefined;
  const amountUSD = usd ?? (micros !== undefined && rate !== undefined ? cents((micros / 1e6) * rate) : undefined);
  if (amountUSD !== undefined) row.amountUSD = row.priceUSD = amountUSD;
  // a revocation refunds all of it unless the store said how much; a family member's shared access, or an upgrade's unsized credit, refunds nothing
  let share = 0;
  if (d.revocationDate !== undefined) {
    share =
      d.revocationType === 'FAMILY_REVOKE' || (t.data.isUpgraded === true && d.revocationType === undefined)
        ? 0
        : ((d.refundedShare as number | undefined) ?? 1);
    row.refundedShare = share;
  }
  const store = COMMISSION[d.platform as string] ?? [0, 0];
  const purchased = ms(d.purchaseDate);
  const later = d.expirationDate !== undefined && purchased !== undefined && chargedAt >= plusOneYear(purchased);
  const kept = (1 - share) * (1 - (later ? store[1] : store[0]));
  if (amountUSD !== undefined) row.proceedsUSD = cents(amountUSD * kept);
  if (micros !== undefined) row.proceedsMicros = Math.round(micros * kept);
  // docs/api.md, "Provenance": the winning event; when the log received it is the infrastructure's to say
  row.provenance = { kind: PROVENANCE_KINDS[t.source] ?? 'producer', source: t.source, eventId: t.eventId, receivedAt: expect.any(String) };
  return row;
}

/** docs/api.md, "Provenance": the service's own sources and the kind each stands for; any other is a producer's. */
const PROVENANCE_KINDS: Record<string, string> = {
  'apple-app-store-server-notifications': 'store-notification',
  'google-play-rtdn': 'store-notification',
  'stripe-webhooks': 'store-notification',
  'google-play-voided-purchases': 'store-notification',
  'apple-app-store-server-api': 'import',
  'google-play-developer-api': 'import',
  'stripe-api': 'import',
  'subscription-records-purchases': 'app-purchase',
  'subscription-records-reconciliation': 'reconciliation',
};

/** STORE_COMMISSION's default (docs/revenue.md): [standard, after the subscriber's first year]; other platforms none. */
const COMMISSION: Record<string, [number, number]> = { apple: [0.3, 0.15], google: [0.15, 0.15] };

/** Half away from zero, to the cent. */
const cents = (usd: number) => (Math.sign(usd) * Math.round(Math.abs(usd) * 100 + 1e-9)) / 100;

/** A calendar year later; 29 February falls on 28 February, as PostgreSQL's interval arithmetic does. */
export function plusOneYear(t: number): number {
  const d = new Date(t);
  const leapDay = d.getUTCMonth() === 1 && d.getUTCDate() === 29;
  d.setUTCDate(leapDay ? 28 : d.getUTCDate());
  d.setUTCFullYear(d.getUTCFullYear() + 1);
  return d.getTime();
}

/**
 * Exchange rates as the European Central Bank publishes them: per day (YYYY-MM-DD), units of each
 * currency per euro. docs/exchange-rates.md: the rates of the last day at or before the charge day
 * that has a USD rate, looking back less than 14 days; a currency without a rate that day has no USD.
 */
export type EcbRates = Record<string, Record<string, number>>;
let rates: EcbRates = {};
/** The rates transactionJson converts with (none unless a test loads some). */
export function useRates(r: EcbRates): void {
  rates = r;
}
export function usdPerUnit(table: EcbRates, currency: string, at: number): number | undefined {
  if (currency === 'USD') return 1;
  for (let back = 0; back < 14; back++) {
    const day = new Date(at - back * 86_400_000).toISOString().slice(0, 10);
    const quoted = table[day];
    if (quoted?.USD === undefined) continue;
    if (currency === 'EUR') return quoted.USD;
    return quoted[currency] === undefined ? undefined : quoted.USD / quoted[currency];
  }
  return undefined;
}
