import fc from 'fast-check';
import type { RawEvent } from './reference-model.js';

// Store lifecycles as fast-check values (so a failure shrinks to a short history), expanded into
// the snapshots a store pipeline would publish: purchases, renewals, trials, refunds, upgrades,
// grace and billing retry, pending then completed, restores to another account, transactions
// moving between receipts, corrected dates, stale snapshots, sandbox, consumables, several apps,
// and customer erasures (by name or by keyed hash, at an event's exact time or between events),
// with the erased username used again afterwards (docs/privacy.md: a re-signup is a new customer).
// Each history also carries the entitlements its apps define (docs/entitlements.md) over the
// products the generator sells, and changes made to them after a first comparison.

const DAY = 86_400_000;
// In the past: events timed in the future are refused (future_time), as they should be.
export const HISTORY_START = Date.UTC(2010, 0, 1);

export type Step =
  | 'renew'
  | 'refund'
  | 'lapse'
  | 'billing-retry'
  | 'billing-retry-no-grace'
  | 'recovered'
  | 'expire-early'
  | 'upgrade'
  | 'replaced-by-reason'
  | 'upgrade-new-transaction'
  | 'downgrade-at-renewal'
  | 'restore'
  | 'move-transaction'
  | 'correct-date'
  | 'stale-snapshot'
  | 'partial-refund'
  | 'renewal-with-original-user';

export type PurchaseSpec = {
  platform: 'apple' | 'google';
  product: 'monthly' | 'yearly' | 'coins' | 'lifetime';
  startDay: number;
  link: 'implicit' | 'explicit' | 'none';
  trial: boolean;
  pending: 'no' | 'completed' | 'stays';
  sandbox: boolean;
  steps: Step[];
};
export type CustomerSpec = { user: number; app: number; purchases: PurchaseSpec[] };
/**
 * One customer.erased. `exact`: dated exactly at the time of one of the events naming the user
 * (index mod their count; "at or before" is the edge), else at `day` (mid-day, between events).
 * `hashed`: the event carries usernameHash instead of the name. `resignup`: the name is used again
 * after the erasure, by a new purchase a day later or 1 ms later, or by a restore of their first
 * receipt a day later.
 */
export type ErasureSpec = {
  user: number;
  app: number;
  day: number;
  exact: number | null;
  hashed: boolean;
  resignup: 'none' | 'purchase' | 'purchase-1ms' | 'relink';
};
/**
 * reuseIds: [i, j] publishes event i again under event j's id (a producer reusing an id for other data).
 * conflicts: [i, k] publishes event i again with its id and time but other data (variant k): two
 * events of one version, which the content digest decides (docs/events/README.md, "Ordering rules").
 */
/**
 * An app's entitlement definitions: `initial` PUT before the first comparison, then `changes` made
 * in order before comparing again (products: a PUT replacing the list; null: a DELETE, answered 404
 * when the name is not defined).
 */
export type DefinitionsSpec = {
  app: number;
  initial: { name: string; products: string[] }[];
  changes: { name: string; products: string[] | null }[];
};
export type HistorySpec = {
  customers: CustomerSpec[];
  definitions?: DefinitionsSpec[];
  redeliver: number[];
  reuseIds?: [number, number][];
  conflicts?: [number, number][];
  erasures?: ErasureSpec[];
};
/** The keyed hash a hashed customer.erased carries (the test computes it from public.erasure_key). */
export type UsernameHash = (app: string, username: string) => string;

const step = fc.constantFrom<Step>(
  'renew',
  'renew',
  'renew',
  'refund',
  'lapse',
  'billing-retry',
  'billing-retry-no-grace',
  'recovered',
  'expire-early',
  'upgrade',
  'replaced-by-reason',
  'upgrade-new-transaction',
  'downgrade-at-renewal',
  'restore',
  'move-transaction',
  'correct-date',
  'stale-snapshot',
  'renewal-with-original-user',
  'partial-refund',
);

const purchase: fc.Arbitrary<PurchaseSpec> = fc.record({
  platform: fc.constantFrom('apple', 'google'),
  product: fc.constantFrom('monthly', 'monthly', 'yearly', 'coins', 'lifetime'),
  startDay: fc.integer({ min: 0, max: 400 }),
  link: fc.constantFrom('implicit', 'implicit', 'explicit', 'none'),
  trial: fc.boolean(),
  pending: fc.constantFrom('no', 'no', 'no', 'completed', 'stays'),
  sandbox: fc.boolean(),
  steps: fc.array(step, { maxLength: 7 }),
});

/**
 * What a definition may list: every product the generator sells, subscriptions of both stores
 * (monthly, yearly and the plus an Apple crossgrade moves to), one-time purchases (the lifetime
 * unlock, the consumed coins) and a product nobody buys.
 */
export const ENTITLEMENT_PRODUCTS = ['apple', 'google']
  .flatMap((p) => ['monthly', 'yearly', 'plus', 'lifetime', 'coins'].map((n) => `${p}:${n}`))
  .concat('apple:unsold');
const entitlementName = fc.constantFrom('pro', 'plus', 'Pro', 'max-2', 'lifetime.v1');
const productList = fc.uniqueArray(fc.constantFrom(...ENTITLEMENT_PRODUCTS), { minLength: 1, maxLength: 3 });
const definitionsOf = (app: number): fc.Arbitrary<DefinitionsSpec> =>
  fc.record({
    app: fc.constant(app),
    initial: fc.uniqueArray(fc.record({ name: entitlementName, products: productList }), { selector: (d) => d.name, maxLength: 4 }),
    changes: fc.array(fc.record({ name: entitlementName, products: fc.option(productList, { nil: null, freq: 3 }) }), { minLength: 1, maxLength: 4 }),
  });

export const historyArbitrary: fc.Arbitrary<HistorySpec> = fc.record({
  // few users and two apps, so restores and moves land on customers that exist
  customers: fc.array(
    fc.record({ user: fc.integer({ min: 0, max: 4 }), app: fc.integer({ min: 0, max: 1 }), purchases: fc.array(purchase, { minLength: 1, maxLength: 3 }) }),
    {
      minLength: 1,
      maxLength: 5,
    },
  ),
  // both apps' definitions; initial ones may be none
  definitions: fc.tuple(definitionsOf(0), definitionsOf(1)),
  // indexes (mod the event count) of events delivered twice
  redeliver: fc.array(fc.nat(), { maxLength: 6 }),
  reuseIds: fc.array(fc.tuple(fc.nat(), fc.nat()), { maxLength: 3 }),
  conflicts: fc.array(fc.tuple(fc.nat(), fc.nat()), { maxLength: 3 }),
  erasures: fc.array(
    fc.record({
      user: fc.integer({ min: 0, max: 4 }),
      app: fc.integer({ min: 0, max: 1 }),
      day: fc.integer({ min: 0, max: 600 }),
      exact: fc.option(fc.nat(), { nil: null }),
      hashed: fc.boolean(),
      resignup: fc.constantFrom<ErasureSpec['resignup']>('none', 'none', 'purchase', 'purchase-1ms', 'relink'),
    }),
    { maxLength: 3 },
  ),
});

const iso = (t: number) => new Date(t).toISOString();

/** The events of one history, in the order they happened (arrival order is decided separately). */
export function expandHistory(spec: HistorySpec, tag: string, hash?: UsernameHash): RawEvent[] {
  const events: RawEvent[] = [];
  let n = 0;
  const appOf = (i: number) => `${tag}-app${i}`;
  const userOf = (i: number) => `u${String(i).padStart(2, '0')}`;
  const emit = (app: string, type: RawEvent['type'], time: number, data: Record<string, unknown>) => {
    events.push({ specversion: '1.0', source: 'model', id: `${tag}-e${String(++n).padStart(4, '0')}`, type, time: iso(time), appid: app, data } as RawEvent);
  };
  // every first receipt per app, known up front, so a transaction can move to any other one
  const receiptsByApp = new Map<string, string[]>();
  spec.customers.forEach((c, ci) =>
    c.purchases.forEach((p, pi) => receiptsByApp.set(appOf(c.app), [...(receiptsByApp.get(appOf(c.app)) ?? []), `${p.platform}:r${ci}x${pi}`])),
  );

  spec.customers.forEach((customer, ci) => {
    const app = appOf(customer.app);
    const user = userOf(customer.user);
    customer.purchases.forEach((p, pi) => {
      const local = `${ci}x${pi}`;
      let receiptId = `${p.platform}:r${local}`;
      const purchaseId = `${p.platform}:p${local}`;
      const period = p.product === 'yearly' ? 365 * DAY : 30 * DAY;
      const subscription = p.product === 'monthly' || p.product === 'yearly';
      const start = HISTORY_START + p.startDay * DAY + ci * 60_000 + pi * 1000;
      let txCount = 0;
      const base = (purchaseDate: number) => ({
        purchaseId,
        productId: `${p.platform}:${p.product}`,
        platform: p.platform,
        receiptId,
        purchaseDate: iso(purchaseDate),
        ...(p.sandbox ? { sandbox: true } : {}),
        currency: 'USD',
        amountMicros: p.product === 'yearly' ? 49_990_000 : 4_990_000,
      });

      if (p.link === 'explicit') emit(app, 'receipt.linked', start - 500, { receiptId, applicationUsername: user });
      const linkData = p.link === 'implicit' ? { applicationUsername: user } : {};

      if (!subscription) {
        const transactionId = `${p.platform}:t${local}n0`;
        const data = { ...base(start), transactionId, quantity: p.product === 'coins' ? 3 : 1, isConsumed: p.product === 'coins', ...linkData };
        emit(app, 'transaction.updated', start + 1000, p.pending === 'no' ? data : { ...data, isPending: true });
        if (p.pending === 'completed') emit(app, 'transaction.updated', start + 2 * DAY, data);
        for (const s of p.steps) {
          if (s === 'refund')
            emit(app, 'transaction.updated', start + 3 * DAY, { ...data, revocationDate: iso(start + 3 * DAY), cancelationReason: 'Customer' });
          if (s === 'stale-snapshot') emit(app, 'transaction.updated', start + 500, { ...data, quantity: 99 });
          // Google's cancelled one-time purchase: the store says it expired, without a revocation
          if (s === 'expire-early' && p.platform === 'google') emit(app, 'transaction.updated', start + 5 * DAY, { ...data, isExpired: true });
          // Apple REFUND_PRORATED (revocationPercentage 25000), Google a voided unit of several
          if (s === 'partial-refund')
            emit(app, 'transaction.updated', start + 4 * DAY, {
              ...data,
              revocationDate: iso(start + 4 * DAY),
              cancelationReason: 'Customer',
              revocationType: 'REFUND_PRORATED',
              refundedShare: 0.25,
            });
        }
        return;
      }

      // current transaction state, re-emitted as a whole snapshot on every change
      let tx: Record<string, unknown> = {
        ...base(start),
        transactionId: `${p.platform}:t${local}n${txCount++}`,
        expirationDate: iso(start + (p.trial ? 7 * DAY : period)),
        renewalIntent: 'Renew',
        ...(p.trial ? { isTrialPeriod: true } : {}),
        ...linkData,
      };
      let clock = start + 1000;
      const snapshot = (change: Record<string, unknown>, at: number) => {
        tx = { ...tx, ...change };
        for (const [k, v] of Object.entries(tx)) if (v === undefined) delete tx[k];
        clock = Math.max(clock + 1000, at);
        emit(app, 'transaction.updated', clock, tx);
      };
      if (p.pending !== 'no') {
        snapshot({ isPending: true }, start + 1000);
        if (p.pending === 'stays') return;
        snapshot({ isPending: undefined }, start + DAY);
      } else {
        snapshot({}, start + 1000);
      }

      for (const s of p.steps) {
        const expiration = Date.parse(tx.expirationDate as string);
        switch (s) {
          case 'renew': {
            // a new transaction: the original purchaseDate, its own lastRenewalDate
            const next = expiration + period;
            tx = {
              ...tx,
              transactionId: `${p.platform}:t${local}n${txCount++}`,
              lastRenewalDate: iso(expiration),
              expirationDate: iso(next),
              isTrialPeriod: undefined,
              isBillingRetryPeriod: undefined,
              gracePeriodExpirationDate: undefined,
            };
            if (p.link === 'implicit') delete tx.applicationUsername;
            snapshot({}, expiration + 60_000);
            break;
          }
          case 'renewal-with-original-user':
            tx = {
              ...tx,
              transactionId: `${p.platform}:t${local}n${txCount++}`,
              lastRenewalDate: iso(expiration),
              expirationDate: iso(expiration + period),
              applicationUsername: user,
            };
            snapshot({}, expiration + 60_000);
            break;
          case 'refund':
            // Apple keeps expiresDate on a refunded transaction and adds the revocation
            snapshot(
              { revocationDate: iso(expiration - period / 2), cancelationReason: 'Customer', isExpired: true, renewalIntent: 'Lapse' },
              expiration - period / 2,
            );
            break;
          case 'lapse':
            snapshot({ renewalIntent: 'Lapse', renewalIntentChangeDate: iso(expiration - 3 * DAY) }, expiration - 3 * DAY);
            break;
          case 'billing-retry':
            snapshot({ isBillingRetryPeriod: true, gracePeriodExpirationDate: iso(expiration + 16 * DAY) }, expiration + 60_000);
            break;
          case 'billing-retry-no-grace':
            snapshot({ isBillingRetryPeriod: true }, expiration + 60_000);
            break;
          case 'recovered':
            snapshot({ isBillingRetryPeriod: undefined, gracePeriodExpirationDate: undefined, expirationDate: iso(expiration + period) }, expiration + 2 * DAY);
            break;
          case 'expire-early':
            snapshot({ isExpired: true }, expiration - 5 * DAY);
            break;
          case 'upgrade':
          case 'replaced-by-reason': {
            // the old one is replaced; a new product starts now (Google: on a new purchase token)
            const at = expiration - 10 * DAY;
            snapshot(s === 'upgrade' ? { isUpgraded: true } : { cancelationReason: 'System.Replaced' }, at);
            if (p.platform === 'google') {
              receiptId = `${p.platform}:r${local}u${txCount}`;
              receiptsByApp.set(app, [...(receiptsByApp.get(app) ?? []), receiptId]);
            }
            tx = {
              ...base(at),
              receiptId,
              transactionId: `${p.platform}:t${local}n${txCount++}`,
              productId: `${p.platform}:${p.product === 'yearly' ? 'monthly' : 'yearly'}`,
              expirationDate: iso(at + (p.product === 'yearly' ? 30 * DAY : 365 * DAY)),
              renewalIntent: 'Renew',
              ...(p.platform === 'google' && p.link !== 'none' ? { applicationUsername: user } : {}),
            };
            snapshot({}, at + 1000);
            break;
          }
          case 'upgrade-new-transaction':
          case 'downgrade-at-renewal': {
            // Apple: the new product's transaction in the same subscription (same receipt and purchase),
            // nothing said of the old one. An upgrade or same-duration crossgrade starts at once; a
            // downgrade (or other-duration crossgrade) at the renewal.
            const at = s === 'upgrade-new-transaction' ? expiration - 10 * DAY : expiration;
            const product = `${p.platform}:${tx.productId === `${p.platform}:plus` ? p.product : 'plus'}`;
            tx = {
              ...tx,
              transactionId: `${p.platform}:t${local}n${txCount++}`,
              productId: product,
              lastRenewalDate: iso(at),
              expirationDate: iso(at + 30 * DAY),
              renewalIntent: 'Renew',
              isTrialPeriod: undefined,
              isBillingRetryPeriod: undefined,
              gracePeriodExpirationDate: undefined,
              isExpired: undefined,
              revocationDate: undefined,
              cancelationReason: undefined,
              isUpgraded: undefined,
            };
            if (p.link === 'implicit') delete tx.applicationUsername;
            snapshot({}, at + 60_000);
            break;
          }
          case 'restore': {
            // restored on another account of the same app
            const other = userOf((customer.user + 1) % 5);
            clock += 1000;
            emit(app, 'receipt.linked', clock, { receiptId, applicationUsername: other });
            break;
          }
          case 'move-transaction': {
            const others = receiptsByApp.get(app)!.filter((r) => r.startsWith(`${p.platform}:`) && r !== receiptId);
            // the store now reports it under another receipt, without the original username
            if (others.length > 0) snapshot({ receiptId: others[0], applicationUsername: undefined }, clock + 1000);
            break;
          }
          case 'correct-date':
            snapshot({ purchaseDate: iso(Date.parse(tx.purchaseDate as string) - 2 * DAY) }, clock + 1000);
            break;
          case 'partial-refund':
            // a prorated refund of the current period: access ends as with any revocation
            snapshot(
              {
                revocationDate: iso(expiration - period / 3),
                cancelationReason: 'Customer',
                isExpired: true,
                revocationType: 'REFUND_PRORATED',
                refundedShare: 0.5,
              },
              expiration - period / 3,
            );
            break;
          case 'stale-snapshot':
            // published late with an old time: loses to everything newer
            emit(app, 'transaction.updated', start + 500, { ...tx, expirationDate: iso(expiration + 900 * DAY), renewalIntent: 'Renew', isExpired: undefined });
            break;
        }
      }
    });
  });

  (spec.erasures ?? []).forEach((erasure, k) => {
    const app = appOf(erasure.app);
    const user = userOf(erasure.user);
    const naming = events.filter((e) => e.appid === app && e.data.applicationUsername === user).map((e) => Date.parse(e.time));
    const at = erasure.exact !== null && naming.length > 0 ? naming[erasure.exact % naming.length] : HISTORY_START + erasure.day * DAY + 43_210_000;
    if (erasure.hashed && !hash) throw new Error('a hashed erasure needs the hash function');
    emit(app, 'customer.erased', at, erasure.hashed ? { usernameHash: hash!(app, user) } : { applicationUsername: user });
    if (erasure.resignup === 'purchase' || erasure.resignup === 'purchase-1ms') {
      const later = at + (erasure.resignup === 'purchase' ? DAY : 1);
      emit(app, 'transaction.updated', later, {
        transactionId: `apple:te${k}`,
        purchaseId: `apple:pe${k}`,
        productId: 'apple:coins',
        platform: 'apple',
        receiptId: `apple:re${k}`,
        purchaseDate: iso(later),
        quantity: 1,
        isConsumed: true,
        currency: 'USD',
        amountMicros: 990_000,
        applicationUsername: user,
      });
    }
    const first = spec.customers.findIndex((c) => c.app === erasure.app && c.user === erasure.user);
    if (erasure.resignup === 'relink' && first >= 0) {
      emit(app, 'receipt.linked', at + DAY, { receiptId: `${spec.customers[first].purchases[0].platform}:r${first}x0`, applicationUsername: user });
    }
  });

  const count = events.length;
  for (const i of spec.redeliver) if (count > 0) events.push(events[i % count]);
  for (const [i, j] of spec.reuseIds ?? []) if (count > 0 && i % count !== j % count) events.push({ ...events[i % count], id: events[j % count].id });
  for (const [i, k] of spec.conflicts ?? []) if (count > 0) events.push(conflicting(events[i % count], k));
  return events;
}

/**
 * The arrival order the live path projects exactly (docs/privacy.md, "the live path's one
 * approximation"): each erasure arrives before every event naming its customer dated after it (a
 * store pipeline cannot publish a purchase before it happens, nor the erasure service after it
 * answered). Events dated before it may still arrive after it (late events). Every copy of an
 * erasure is moved (every event counts, redeliveries and reused ids too); the test also ends a
 * batch at each erasure.
 */
export function erasuresBeforeLaterEvents(arrival: readonly RawEvent[], users: readonly string[], hash?: UsernameHash): RawEvent[] {
  const out = [...arrival];
  for (let i = 0; i < out.length; i++) {
    const e = out[i];
    if (e.type !== 'customer.erased') continue;
    const name = (e.data.applicationUsername as string | undefined) ?? users.find((u) => hash?.(e.appid, u) === e.data.usernameHash);
    const at = Date.parse(e.time);
    const j = out.findIndex((o, k) => k < i && o.appid === e.appid && o.data.applicationUsername === name && Date.parse(o.time) > at);
    if (j >= 0) {
      out.splice(i, 1);
      out.splice(j, 0, e);
    }
  }
  return out;
}

/** The generator's usernames. */
export const USERS = [0, 1, 2, 3, 4].map((i) => `u${String(i).padStart(2, '0')}`);

/** Instants to ask "who is active" at: the history's span, before and after. */
export const NOW_INSTANTS = [-1, 20, 100, 250, 500, 900, 2000].map((d) => new Date(HISTORY_START + d * DAY));

/** The same id and time with other data: another expiration, intent, or username. */
function conflicting(e: RawEvent, variant: number): RawEvent {
  const d = e.data;
  if (e.type === 'customer.erased') return e; // an erasure has no other data to vary: a redelivery
  if (e.type === 'receipt.linked') return { ...e, data: { ...d, applicationUsername: `${d.applicationUsername as string}-alt` } };
  switch (variant % 3) {
    case 0:
      return d.expirationDate === undefined
        ? { ...e, data: { ...d, isAcknowledged: !d.isAcknowledged } }
        : { ...e, data: { ...d, expirationDate: iso(Date.parse(d.expirationDate as string) + 30 * DAY) } };
    case 1:
      return { ...e, data: { ...d, renewalIntent: d.renewalIntent === 'Lapse' ? 'Renew' : 'Lapse' } };
    default:
      return d.applicationUsername === undefined
        ? { ...e, data: { ...d, isAcknowledged: !d.isAcknowledged } }
        : { ...e, data: { ...d, applicationUsername: `${d.applicationUsername as string}-alt` } };
  }
}
