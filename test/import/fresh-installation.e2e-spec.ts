import { jest } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { createAppleTestCa, type AppleTestCa } from '../../src/store-notifications/apple/apple-test-ca.js';
import { ReferenceModel, type RawEvent } from '../model/reference-model.js';
import { startAppleStoreMock, type AppleStoreMock, type MockTransaction } from '../utils/apple-store-mock.js';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { embeddedLogCaughtUp } from '../utils/events.js';
import { startGooglePlayMock } from '../utils/google-play-mock.js';
import { runCli, writeTempFile } from '../utils/processes.js';

jest.setTimeout(115_000);

// Issue 22, "a fresh installation": the stores hold a few hundred existing customers with realistic
// histories (generated from a seed); the service knows nobody. `import apple`, `import google` and
// `import google-voided` (the built CLI) bring them in; both endpoints must then answer what the
// reference model (test/model) computes from the mocks' data alone, through a mapping written here
// from docs/events/apple.md and google.md (not the service's *-to-events.ts). Live notifications for
// the same customers then continue on top: no duplicates, the newest state wins, and the imports run
// again change nothing.

const SEED = Number(process.env.FRESH_SEED ?? 22);
const BUNDLE = 'com.example.fresh';
const PACKAGE = 'com.example.fresh';
const AUDIENCE = 'https://records.example.com/v2/notifications/google/app-g';
const DAY = 86_400_000;
const NOW = Date.now();
/** Every App Store answer is signed at this instant: the imported events' time (docs/import.md). */
const SIGNED = NOW - 60_000;
const iso = (ms: number) => new Date(ms).toISOString();
type Data = Record<string, unknown>;

/** mulberry32: a small seeded generator, so a failure replays with FRESH_SEED. */
function random(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1)), pick: <T>(xs: readonly T[]) => xs[Math.floor(next() * xs.length)] };
}

// ---------------------------------------------------------------------------------------------
// The App Store's truth, and its events by docs/events/apple.md ("Mapping").

type AppleCustomer = { transactions: MockTransaction[]; statuses: Map<string, { status: number; renewal: Data }>; username?: string; csvName?: string };

function appleData(t: MockTransaction, o: { renewal?: Data; expired?: boolean; renewalIntentChangeDate?: number } = {}): Data {
  const original = t.originalTransactionId;
  const d: Data = {
    transactionId: `apple:${t.transactionId}`,
    purchaseId: `apple:${original}`,
    receiptId: `apple:${original}`,
    productId: `apple:${t.productId}`,
    platform: 'apple',
    sandbox: true,
    purchaseDate: iso((t.originalPurchaseDate as number | undefined) ?? t.purchaseDate),
    amountMicros: (t.price as number) * 1000,
    currency: t.currency,
    quantity: t.quantity,
  };
  if (t.transactionId !== original) d.lastRenewalDate = iso(t.purchaseDate);
  if (t.appAccountToken) d.applicationUsername = t.appAccountToken;
  if (t.expiresDate !== undefined) d.expirationDate = iso(t.expiresDate as number);
  const r = o.renewal;
  if (r) {
    d.renewalIntent = r.autoRenewStatus === 1 ? 'Renew' : 'Lapse';
    if (r.isInBillingRetryPeriod !== undefined) d.isBillingRetryPeriod = r.isInBillingRetryPeriod;
    if (r.isInBillingRetryPeriod === true && r.gracePeriodExpiresDate !== undefined) d.gracePeriodExpirationDate = iso(r.gracePeriodExpiresDate as number);
  }
  if (o.renewalIntentChangeDate !== undefined) d.renewalIntentChangeDate = iso(o.renewalIntentChangeDate);
  if (t.revocationDate !== undefined) {
    d.revocationDate = iso(t.revocationDate as number);
    d.cancelationReason = t.revocationReason === 1 ? 'Developer' : 'Customer';
  }
  if (t.isUpgraded === true) {
    d.isUpgraded = true;
    d.cancelationReason = 'System.Replaced';
  }
  if (o.expired || t.revocationDate !== undefined) d.isExpired = true;
  return d;
}

/** What `import apple` must amount to for one customer: each history transaction as of SIGNED, the latest of a subscription with its status. */
function appleImportEvents(c: AppleCustomer, signed = SIGNED): RawEvent[] {
  const events: RawEvent[] = [];
  const latest = new Map<string, MockTransaction>();
  for (const t of c.transactions) {
    const seen = latest.get(t.originalTransactionId);
    if (t.expiresDate !== undefined && !(seen !== undefined && seen.purchaseDate >= t.purchaseDate)) latest.set(t.originalTransactionId, t);
  }
  for (const t of c.transactions) {
    const isLatest = latest.get(t.originalTransactionId) === t;
    const state = isLatest ? (c.statuses.get(t.originalTransactionId) ?? { status: 1, renewal: { autoRenewStatus: 1 } }) : undefined;
    events.push(
      tx(IMPORT_APPLE, 'app-a', `fresh-apple:${t.transactionId}:${signed}`, signed, appleData(t, { renewal: state?.renewal, expired: state?.status === 2 })),
    );
    if (t.appAccountToken)
      events.push(
        link(IMPORT_APPLE, 'app-a', `fresh-apple:${t.transactionId}:${signed}:link`, signed, `apple:${t.originalTransactionId}`, t.appAccountToken as string),
      );
  }
  if (c.csvName)
    for (const original of new Set(c.transactions.map((t) => t.originalTransactionId)))
      events.push(link(IMPORT_APPLE, 'app-a', `fresh-apple:${original}:${signed}:csv`, signed, `apple:${original}`, c.csvName));
  return events;
}

/** The CloudEvents source of each path (docs/api.md, "Provenance"). */
const IMPORT_APPLE = 'apple-app-store-server-api';
const IMPORT_GOOGLE = 'google-play-developer-api';
const NOTIFIED_APPLE = 'apple-app-store-server-notifications';
const NOTIFIED_GOOGLE = 'google-play-rtdn';

const tx = (source: string, appid: string, id: string, time: number, data: Data): RawEvent => ({
  specversion: '1.0',
  source,
  id,
  type: 'transaction.updated',
  time: iso(time),
  appid,
  data,
});
const link = (source: string, appid: string, id: string, time: number, receiptId: string, name: string): RawEvent => ({
  specversion: '1.0',
  source,
  id,
  type: 'receipt.linked',
  time: iso(time),
  appid,
  data: { receiptId, applicationUsername: name },
});

// ---------------------------------------------------------------------------------------------
// Google Play's truth, and its events by docs/events/google.md.

type GoogleSub = Data & { latestOrderId: string; lineItems: Data[] };
type GooglePurchase = { token: string; sub?: GoogleSub; product?: { sku: string; purchase: Data; csvName?: string }; linkedFrom?: string; gone?: 404 | 410 };

function googleSubData(token: string, s: GoogleSub, replaced: boolean): Data {
  const li = s.lineItems[0] as {
    productId: string;
    expiryTime: string;
    autoRenewingPlan?: { autoRenewEnabled: boolean; recurringPrice: { currencyCode: string; units: string; nanos: number } };
  };
  const order = s.latestOrderId;
  const state = s.subscriptionState as string;
  const d: Data = {
    transactionId: `google:${order}`,
    purchaseId: `google:${order.replace(/\.\.\d+$/, '')}`,
    receiptId: `google:${token}`,
    productId: `google:${li.productId}`,
    platform: 'google',
    sandbox: false,
    expirationDate: li.expiryTime,
    isAcknowledged: s.acknowledgementState === 'ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED',
  };
  if (!/\.\.\d+$/.test(order)) d.purchaseDate = s.startTime;
  const user = (s.externalAccountIdentifiers as Data | undefined)?.obfuscatedExternalAccountId;
  if (user) d.applicationUsername = user;
  if (li.autoRenewingPlan) {
    d.renewalIntent = li.autoRenewingPlan.autoRenewEnabled ? 'Renew' : 'Lapse';
    d.amountMicros = Number(li.autoRenewingPlan.recurringPrice.units) * 1_000_000 + li.autoRenewingPlan.recurringPrice.nanos / 1000;
    d.currency = li.autoRenewingPlan.recurringPrice.currencyCode;
  }
  const canceled = s.canceledStateContext as Data | undefined;
  if (canceled?.replacementCancellation) d.cancelationReason = 'System.Replaced';
  else if (canceled?.userInitiatedCancellation) d.cancelationReason = 'Customer';
  else if (canceled?.systemInitiatedCancellation) d.cancelationReason = 'System';
  else if (canceled?.developerInitiatedCancellation) d.cancelationReason = 'Developer';
  if (state === 'SUBSCRIPTION_STATE_IN_GRACE_PERIOD' || state === 'SUBSCRIPTION_STATE_ON_HOLD') d.isBillingRetryPeriod = true;
  if (state === 'SUBSCRIPTION_STATE_IN_GRACE_PERIOD') d.gracePeriodExpirationDate = li.expiryTime;
  if (['SUBSCRIPTION_STATE_ON_HOLD', 'SUBSCRIPTION_STATE_PAUSED', 'SUBSCRIPTION_STATE_EXPIRED', 'SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED'].includes(state))
    d.isExpired = true;
  if (replaced) {
    d.isUpgraded = true;
    d.cancelationReason = 'System.Replaced';
  }
  return d;
}

function googleProductData(token: string, sku: string, p: Data): Data {
  return {
    transactionId: `google:${p.orderId}`,
    purchaseId: `google:${p.orderId}`,
    receiptId: `google:${token}`,
    productId: `google:${sku}`,
    platform: 'google',
    sandbox: p.purchaseType === 0,
    purchaseDate: iso(Number(p.purchaseTimeMillis)),
    isConsumed: p.consumptionState === 1,
    isAcknowledged: p.acknowledgementState === 1,
    quantity: p.quantity,
  };
}

// ---------------------------------------------------------------------------------------------
// The generator: a few hundred customers, about half in each store.

function generate(seed: number) {
  const r = random(seed);
  let seq = 2_000_000_000 + seed * 100_000;
  const id = () => String(++seq);
  const apple: AppleCustomer[] = [];
  const monthly = (o: { product: string; months: number; lastStartDaysAgo: number; user?: string; family?: boolean; period?: number }): MockTransaction[] => {
    const period = (o.period ?? 30) * DAY;
    const original = id();
    const lastStart = NOW - o.lastStartDaysAgo * DAY - r.int(0, 3_600_000);
    const firstStart = lastStart - (o.months - 1) * period;
    return Array.from({ length: o.months }, (_, i) => ({
      transactionId: i === 0 ? original : id(),
      originalTransactionId: original,
      productId: o.product,
      purchaseDate: firstStart + i * period,
      originalPurchaseDate: firstStart,
      expiresDate: firstStart + (i + 1) * period,
      type: 'Auto-Renewable Subscription',
      quantity: 1,
      inAppOwnershipType: o.family ? 'FAMILY_SHARED' : 'PURCHASED',
      transactionReason: i === 0 ? 'PURCHASE' : 'RENEWAL',
      price: o.product === 'basic_monthly' ? 2990 : 4990,
      currency: 'USD',
      ...(o.user ? { appAccountToken: o.user } : {}),
    }));
  };
  const consumable = (user?: string): MockTransaction => {
    const t = id();
    return {
      transactionId: t,
      originalTransactionId: t,
      productId: r.pick(['coins_100', 'coins_500']),
      purchaseDate: NOW - r.int(1, 200) * DAY,
      type: 'Consumable',
      quantity: r.int(1, 3),
      inAppOwnershipType: 'PURCHASED',
      price: 990,
      currency: 'USD',
      ...(user ? { appAccountToken: user } : {}),
    };
  };
  const uuid = () => {
    const h = Array.from({ length: 32 }, () => r.int(0, 15).toString(16)).join('');
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
  };
  const APPLE_KINDS = ['renewing', 'renewing', 'lapsing', 'expired', 'refunded', 'grace', 'retry', 'upgrade', 'family', 'consumables', 'several'] as const;
  for (let n = 0; n < 160; n++) {
    const kind = APPLE_KINDS[n % APPLE_KINDS.length];
    const byFile = r.next() < 0.25; // no appAccountToken: the file names them
    const user = byFile ? undefined : uuid();
    const c: AppleCustomer = { transactions: [], statuses: new Map(), username: user, csvName: byFile ? `apple-user-${seed}-${n}` : undefined };
    const status = (t: MockTransaction[], status: number, renewal: Data) => c.statuses.set(t[0].originalTransactionId, { status, renewal });
    if (kind === 'renewing' || kind === 'lapsing' || kind === 'family') {
      const chain = monthly({ product: 'pro_monthly', months: r.int(1, 8), lastStartDaysAgo: r.int(1, 27), user, family: kind === 'family' });
      c.transactions.push(...chain);
      status(chain, 1, { autoRenewStatus: kind === 'lapsing' ? 0 : 1 });
    } else if (kind === 'expired') {
      const chain = monthly({ product: 'pro_monthly', months: r.int(1, 6), lastStartDaysAgo: r.int(35, 120), user });
      c.transactions.push(...chain);
      status(chain, 2, { autoRenewStatus: 0, expirationIntent: 1 });
    } else if (kind === 'refunded') {
      const chain = monthly({ product: 'pro_monthly', months: r.int(1, 5), lastStartDaysAgo: r.int(6, 25), user });
      const last = chain.at(-1)!;
      last.revocationDate = last.purchaseDate + r.int(1, 4) * DAY;
      last.revocationReason = 0;
      c.transactions.push(...chain);
      status(chain, 5, { autoRenewStatus: 0 });
    } else if (kind === 'grace' || kind === 'retry') {
      const chain = monthly({ product: 'pro_monthly', months: r.int(1, 6), lastStartDaysAgo: kind === 'grace' ? r.int(31, 34) : r.int(35, 50), user });
      const expires = chain.at(-1)!.expiresDate as number;
      c.transactions.push(...chain);
      status(chain, kind === 'grace' ? 4 : 3, {
        autoRenewStatus: 1,
        isInBillingRetryPeriod: true,
        ...(kind === 'grace' ? { gracePeriodExpiresDate: expires + 16 * DAY } : {}),
      });
    } else if (kind === 'upgrade') {
      const chain = monthly({ product: 'basic_monthly', months: r.int(1, 4), lastStartDaysAgo: r.int(10, 25), user });
      const old = chain.at(-1)!;
      const at = old.purchaseDate + r.int(2, 8) * DAY;
      old.isUpgraded = true;
      old.revocationDate = at;
      const upgraded: MockTransaction = {
        ...old,
        transactionId: id(),
        productId: 'pro_monthly',
        price: 4990,
        purchaseDate: at,
        expiresDate: at + 30 * DAY,
        transactionReason: 'PURCHASE',
      };
      delete upgraded.isUpgraded;
      delete upgraded.revocationDate;
      c.transactions.push(...chain, upgraded);
      status(chain, 1, { autoRenewStatus: 1 });
    } else if (kind === 'consumables') {
      for (let i = r.int(1, 3); i > 0; i--) c.transactions.push(consumable(user));
    } else {
      // several subscriptions (two groups) and a consumable
      const a = monthly({ product: 'pro_monthly', months: r.int(1, 4), lastStartDaysAgo: r.int(1, 27), user });
      const b = monthly({ product: 'storage_yearly', months: r.int(1, 2), lastStartDaysAgo: r.int(40, 300), user, period: 365 });
      c.transactions.push(...a, ...b, consumable(user));
      status(a, 1, { autoRenewStatus: r.next() < 0.5 ? 1 : 0 });
      status(b, 1, { autoRenewStatus: 1 });
    }
    apple.push(c);
  }

  const google: GooglePurchase[] = [];
  const sub = (o: {
    n: number;
    user: string;
    state: string;
    renewals: number;
    startDaysAgo: number;
    expires: number;
    autoRenew: boolean;
    product?: string;
    linked?: string;
    canceled?: Data;
  }): GoogleSub => {
    const base = `GPA.3300-${seed}-${String(o.n).padStart(4, '0')}`;
    const order = o.renewals === 0 ? base : `${base}..${o.renewals - 1}`;
    return {
      kind: 'androidpublisher#subscriptionPurchaseV2',
      regionCode: 'DE',
      startTime: iso(NOW - o.startDaysAgo * DAY - r.int(0, 3_600_000)),
      subscriptionState: o.state,
      latestOrderId: order,
      acknowledgementState: 'ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED',
      externalAccountIdentifiers: { obfuscatedExternalAccountId: o.user },
      ...(o.linked ? { linkedPurchaseToken: o.linked } : {}),
      ...(o.canceled ? { canceledStateContext: o.canceled } : {}),
      lineItems: [
        {
          productId: o.product ?? 'pro_monthly',
          expiryTime: iso(o.expires),
          autoRenewingPlan: { autoRenewEnabled: o.autoRenew, recurringPrice: { currencyCode: 'EUR', units: '4', nanos: 990000000 } },
          offerDetails: { basePlanId: 'monthly', offerTags: [] },
          latestSuccessfulOrderId: order,
        },
      ],
    };
  };
  const GOOGLE_KINDS = ['new', 'renewed', 'renewed', 'canceled', 'expired', 'grace', 'hold', 'upgrade', 'product', 'several', 'forgotten', 'refunded'] as const;
  const voided: { token: string; order: string; at: number }[] = [];
  for (let n = 0; n < 150; n++) {
    const kind = GOOGLE_KINDS[n % GOOGLE_KINDS.length];
    const user = `g-user-${seed}-${n}`;
    const token = `tok-${seed}-${n}-${r.int(0, 1e9).toString(36)}`;
    const renewals = r.int(1, 6);
    const activeSub = (n2 = n) =>
      sub({
        n: n2,
        user,
        state: 'SUBSCRIPTION_STATE_ACTIVE',
        renewals,
        startDaysAgo: renewals * 30 + r.int(1, 20),
        expires: NOW + r.int(2, 28) * DAY,
        autoRenew: true,
      });
    if (kind === 'new')
      google.push({
        token,
        sub: sub({ n, user, state: 'SUBSCRIPTION_STATE_ACTIVE', renewals: 0, startDaysAgo: r.int(1, 25), expires: NOW + r.int(5, 29) * DAY, autoRenew: true }),
      });
    else if (kind === 'renewed') google.push({ token, sub: activeSub() });
    else if (kind === 'canceled')
      google.push({
        token,
        sub: sub({
          n,
          user,
          state: 'SUBSCRIPTION_STATE_CANCELED',
          renewals,
          startDaysAgo: renewals * 30 + 5,
          expires: NOW + r.int(2, 25) * DAY,
          autoRenew: false,
          canceled: { userInitiatedCancellation: { cancelTime: iso(NOW - 2 * DAY) } },
        }),
      });
    else if (kind === 'expired')
      google.push({
        token,
        sub: sub({
          n,
          user,
          state: 'SUBSCRIPTION_STATE_EXPIRED',
          renewals,
          startDaysAgo: renewals * 30 + 60,
          expires: NOW - r.int(3, 50) * DAY,
          autoRenew: false,
          canceled: { userInitiatedCancellation: {} },
        }),
      });
    else if (kind === 'grace')
      google.push({
        token,
        sub: sub({
          n,
          user,
          state: 'SUBSCRIPTION_STATE_IN_GRACE_PERIOD',
          renewals,
          startDaysAgo: renewals * 30 + 3,
          expires: NOW + r.int(2, 6) * DAY,
          autoRenew: true,
        }),
      });
    else if (kind === 'hold')
      google.push({
        token,
        sub: sub({
          n,
          user,
          state: 'SUBSCRIPTION_STATE_ON_HOLD',
          renewals,
          startDaysAgo: renewals * 30 + 10,
          expires: NOW - r.int(2, 20) * DAY,
          autoRenew: true,
        }),
      });
    else if (kind === 'upgrade') {
      const old = `${token}-old`;
      google.push({
        token: old,
        linkedFrom: token,
        sub: sub({
          n: n + 5000,
          user,
          state: 'SUBSCRIPTION_STATE_EXPIRED',
          renewals,
          startDaysAgo: renewals * 30 + 15,
          expires: NOW - r.int(2, 10) * DAY,
          autoRenew: false,
          canceled: { replacementCancellation: {} },
        }),
      });
      google.push({
        token,
        sub: sub({
          n,
          user,
          state: 'SUBSCRIPTION_STATE_ACTIVE',
          renewals: 0,
          startDaysAgo: r.int(2, 10),
          expires: NOW + 300 * DAY,
          autoRenew: true,
          product: 'pro_yearly',
          linked: old,
        }),
      });
    } else if (kind === 'product') {
      google.push({
        token,
        product: {
          sku: r.pick(['coins_100', 'coins_500']),
          csvName: r.next() < 0.7 ? user : undefined,
          purchase: {
            kind: 'androidpublisher#productPurchase',
            purchaseTimeMillis: String(NOW - r.int(1, 100) * DAY),
            purchaseState: 0,
            consumptionState: r.int(0, 1),
            orderId: `GPA.3300-${seed}-P${n}`,
            acknowledgementState: 1,
            regionCode: 'DE',
            quantity: r.int(1, 2),
          },
        },
      });
    } else if (kind === 'several') {
      google.push({ token, sub: activeSub() });
      google.push({
        token: `${token}-b`,
        sub: sub({
          n: n + 5000,
          user,
          state: 'SUBSCRIPTION_STATE_ACTIVE',
          renewals: 0,
          startDaysAgo: r.int(1, 20),
          expires: NOW + r.int(10, 25) * DAY,
          autoRenew: true,
          product: 'storage_monthly',
        }),
      });
    } else if (kind === 'forgotten') {
      google.push({ token, gone: r.next() < 0.5 ? 404 : 410 });
    } else {
      const s = activeSub();
      google.push({ token, sub: s });
      voided.push({ token, order: s.latestOrderId, at: NOW - r.int(2, 40) * 3_600_000 });
    }
  }
  return { apple, google, voided };
}

/** What `import google` (+ `google-voided`) must amount to, every event at `fetched` (the fetch time, docs/events/google.md). */
function googleImportEvents(purchases: GooglePurchase[], voided: { token: string; order: string; at: number }[], fetched: number): RawEvent[] {
  const events: RawEvent[] = [];
  const data = new Map<string, Data>();
  for (const p of purchases) {
    if (p.sub) {
      const d = googleSubData(p.token, p.sub, p.linkedFrom !== undefined);
      data.set(d.transactionId as string, d);
      events.push(tx(IMPORT_GOOGLE, 'app-g', `fresh-google:${p.token}`, fetched, d));
      if (d.applicationUsername)
        events.push(link(IMPORT_GOOGLE, 'app-g', `fresh-google:${p.token}:link`, fetched, d.receiptId as string, d.applicationUsername as string));
    } else if (p.product) {
      events.push(tx(IMPORT_GOOGLE, 'app-g', `fresh-google:${p.token}`, fetched, googleProductData(p.token, p.product.sku, p.product.purchase)));
      if (p.product.csvName) events.push(link(IMPORT_GOOGLE, 'app-g', `fresh-google:${p.token}:csv`, fetched, `google:${p.token}`, p.product.csvName));
    }
  }
  // A void revokes the stored row, just after the snapshot it revokes (voided before the import ran).
  for (const v of voided)
    events.push(
      tx(IMPORT_GOOGLE, 'app-g', `fresh-google-voided:${v.order}`, fetched + 1, {
        ...data.get(`google:${v.order}`)!,
        revocationDate: iso(v.at),
        revocationType: 'REFUND_FULL',
        isExpired: true,
        cancelationReason: 'Customer',
      }),
    );
  return events;
}

// ---------------------------------------------------------------------------------------------

describe('a fresh installation (e2e: seeded store histories, built CLI imports, reference model, then live notifications)', () => {
  let ca: AppleTestCa;
  let apple: AppleStoreMock;
  let google: Awaited<ReturnType<typeof startGooglePlayMock>>;
  let db: TestDatabase;
  let api: TestApp;
  let cliEnv: Record<string, string>;
  const world = generate(SEED);
  /** The windows in which the service fetched Google state: dates inside them are fetch times. */
  const fetchWindows: [number, number][] = [];
  /** When the App Store mock signs its answers. */
  let appleSignedAt = SIGNED;

  beforeAll(async () => {
    ca = await createAppleTestCa();
    apple = await startAppleStoreMock({ ca, bundleId: BUNDLE, signedAt: () => appleSignedAt });
    google = await startGooglePlayMock();
    db = await createTestDatabase('fresh');
    const rootFile = writeTempFile('apple-root.pem', new X509Certificate(ca.root).toString());
    const storeEnv = {
      APPLE_ROOT_CERTIFICATES: rootFile,
      APPLE_APPS: `app-a:${BUNDLE}:Sandbox`,
      GOOGLE_APPS: `app-g:${PACKAGE}`,
      GOOGLE_PUBSUB_AUDIENCE: AUDIENCE,
      GOOGLE_PUBSUB_JWKS_URI: google.jwksUri,
      GOOGLE_SERVICE_ACCOUNT_FILE: writeTempFile('play-key.json', google.serviceAccountKey),
      GOOGLE_API_BASE_URL: google.base,
      GOOGLE_API_SELF_SIGNED_JWT: 'true',
    };
    cliEnv = {
      ...storeEnv,
      DATABASE_URL: db.url,
      APPLE_API_KEYS: `app-a:57246542-96fe-1a63-e053-0824d011072a:TEST123:${writeTempFile('SubscriptionKey_TEST123.p8', apple.privateKeyPem)}`,
      APPLE_API_BASE_URL: apple.base,
      IMPORT_CONCURRENCY: '4',
    };
    api = await startTestApp({ databaseUrl: db.url, env: { CONSUMER_ENABLED: 'true', ...storeEnv } });

    for (const c of world.apple) {
      apple.addCustomer(c.transactions);
      for (const [original, state] of c.statuses) apple.setStatus(original, state);
    }
    for (const p of world.google) {
      if (p.gone) google.forget(PACKAGE, p.token, p.gone);
      else if (p.sub) google.setSubscription(PACKAGE, p.token, p.sub);
      else if (p.product) google.setProduct(PACKAGE, p.product.sku, p.token, p.product.purchase);
    }
    for (const v of world.voided)
      google.addVoided(
        PACKAGE,
        {
          purchaseToken: v.token,
          orderId: v.order,
          purchaseTimeMillis: String(NOW - 40 * DAY),
          voidedTimeMillis: String(v.at),
          voidedSource: 0,
          voidedReason: 1,
        },
        { subscription: true, seenAt: v.at },
      );
  });
  afterAll(async () => {
    await api?.close();
    await db?.drop();
    await apple?.close();
    await google?.close();
  });

  const r = random(SEED + 1);
  const appleFile = () =>
    writeTempFile('apple.csv', world.apple.map((c) => [r.pick(c.transactions).transactionId, ...(c.csvName ? [c.csvName] : [])].join(',')).join('\n') + '\n');
  // The old purchase of an upgrade is reached through linkedPurchaseToken, not named in the file.
  const googleLines = world.google
    .filter((p) => p.linkedFrom === undefined)
    .map((p) => (p.product ? [p.token, p.product.sku, ...(p.product.csvName ? [p.product.csvName] : [])].join(',') : p.token));
  let files: { apple: string; google: string };
  const since = () => iso(NOW - 3 * DAY);

  async function all(path: string, app: string): Promise<{ rows: Data[]; total: number }> {
    const rows: Data[] = [];
    let total = 0;
    for (let skip = 0; ; skip += 100) {
      const res = await api.get(`${path}?skip=${skip}&limit=100`, api.token(app));
      expect(res.status).toBe(200);
      rows.push(...res.body.rows);
      total = res.body.paging.total;
      if (res.body.rows.length < 100) break;
    }
    return { rows, total };
  }

  /** Dates the service chose itself (the fetch time of a Google state) are compared as "a fetch time". */
  const normalize = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(normalize);
    // the model's stand-ins for what only the infrastructure knows (provenance's receivedAt)
    if (value && typeof (value as { asymmetricMatch?: unknown }).asymmetricMatch === 'function') return value;
    if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, normalize(v)]));
    if (typeof value === 'string' && /^\d{4}-\d\d-\d\dT/.test(value)) {
      const t = Date.parse(value);
      if (fetchWindows.some(([a, b]) => t >= a && t <= b + 1)) return 'a fetch time';
    }
    return value;
  };
  const byKey = (key: string) => (a: Data, b: Data) => String(a[key]).localeCompare(String(b[key]));
  /** ownershipType is not among the model's fields: checked against the App Store's data apart. */
  const withoutOwnership = (row: Data) => Object.fromEntries(Object.entries(row).filter(([k]) => k !== 'ownershipType'));
  /** Event ids are each mapping's own (a digest of the fetched state for Google's imports): provenance is held to its kind and source. */
  const withoutEventId = (row: Data) => ({ ...row, provenance: { ...(row.provenance as Data), eventId: 'an event id' } });

  async function expectModelAnswers(events: RawEvent[]): Promise<void> {
    await embeddedLogCaughtUp(db.dataSource);
    const model = new ReferenceModel(events);
    const now = new Date();
    for (const app of ['app-a', 'app-g']) {
      const transactions = await all('/v2/transactions', app);
      const expected = model.transactionsPage(app, { skip: 0, limit: 1_000_000 });
      expect(transactions.total).toBe(expected.paging.total);
      const ids = transactions.rows.map((t) => t.transactionId);
      expect(new Set(ids).size).toBe(ids.length); // no duplicates
      expect(normalize(transactions.rows.map(withoutOwnership).map(withoutEventId).sort(byKey('transactionId')))).toEqual(
        normalize(expected.rows.map(withoutEventId).sort(byKey('transactionId'))),
      );

      const customers = await all('/v2/customers', app);
      const expectedCustomers = model.customersPage(app, { skip: 0, limit: 1_000_000 }, now);
      expect(customers.total).toBe(expectedCustomers.paging.total);
      expect(normalize([...customers.rows].sort(byKey('applicationUsername')))).toEqual(
        normalize([...expectedCustomers.rows].sort(byKey('applicationUsername'))),
      );
    }
    const ownership = new Map(world.apple.flatMap((c) => c.transactions.map((t) => [`apple:${t.transactionId}`, t.inAppOwnershipType])));
    for (const row of (await all('/v2/transactions', 'app-a')).rows)
      expect({ id: row.transactionId, ownershipType: row.ownershipType }).toEqual({
        id: row.transactionId,
        ownershipType: ownership.get(row.transactionId as string),
      });
  }

  const importEvents: RawEvent[] = [];
  const runImports = async () => {
    const a = await runCli(['import', 'apple', '--app', 'app-a', '--file', files.apple], cliEnv);
    const started = Date.now();
    const g = await runCli(['import', 'google', '--app', 'app-g', '--file', files.google], cliEnv);
    // The voided import revokes what the read models hold: as docs/import.md says, once the service
    // has projected what `import google` published (CI's Node 26 leg once ran it a moment too early)
    await embeddedLogCaughtUp(db.dataSource);
    const v = await runCli(['import', 'google-voided', '--app', 'app-g', '--since', since()], cliEnv);
    return { a, g, v, window: [started, Date.now()] as [number, number] };
  };

  it('imports every customer of both stores: both endpoints answer what the reference computes from the stores’ data', async () => {
    files = { apple: appleFile(), google: writeTempFile('google.csv', googleLines.join('\n') + '\n') };
    const { a, g, v, window } = await runImports();
    fetchWindows.push(window);
    expect({ code: a.code, summary: a.stderr.split('\n').filter((l) => /imported|failed:/.test(l)) }).toEqual({
      code: 0,
      summary: [expect.stringMatching(new RegExp(`^imported ${world.apple.length} line\\(s\\) \\(\\d+ event\\(s\\)\\), unchanged 0 .*skipped 0, failed 0$`))],
    });
    const forgotten = world.google.filter((p) => p.gone).length;
    expect(g.code).toBe(0);
    expect(g.stderr).toMatch(
      new RegExp(`imported ${googleLines.length - forgotten} line\\(s\\) \\(\\d+ event\\(s\\)\\), unchanged 0 .*skipped ${forgotten}, failed 0`),
    );
    expect(v.code).toBe(0);
    expect(v.stderr).toMatch(new RegExp(`imported ${world.voided.length} line`));

    importEvents.push(...world.apple.flatMap((c) => appleImportEvents(c)), ...googleImportEvents(world.google, world.voided, window[0]));
    await expectModelAnswers(importEvents);
  });

  it('live notifications for the same customers continue on top: no duplicates, the newest state wins; the imports again change nothing', async () => {
    expect(files).toEqual({ apple: expect.any(String), google: expect.any(String) });
    const live: RawEvent[] = [];
    const postApple = async (n: {
      notificationType: string;
      subtype?: string;
      notificationUUID: string;
      signedDate: number;
      transaction: MockTransaction;
      renewal: Data;
    }) => {
      const res = await fetch(`${api.baseUrl}/v2/notifications/apple/app-a`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ signedPayload: apple.signNotification(n) }),
      });
      expect({ uuid: n.notificationUUID, status: res.status }).toEqual({ uuid: n.notificationUUID, status: 200 });
    };
    const latestOf = (c: AppleCustomer) => [...c.transactions].filter((t) => t.expiresDate !== undefined).sort((x, y) => y.purchaseDate - x.purchaseDate)[0];
    const kinds = (k: string) =>
      world.apple.filter(
        (_, i) =>
          i % 11 === ['renewing', 'renewing', 'lapsing', 'expired', 'refunded', 'grace', 'retry', 'upgrade', 'family', 'consumables', 'several'].indexOf(k),
      );
    let uuid = 0;
    const nextUuid = () => `00000000-0000-4000-8000-${String(++uuid).padStart(12, '0')}`;
    let at = Date.now() - 30_000;

    // Billing recovered (grace and retry customers): a renewal charged an hour ago.
    for (const c of [...kinds('grace').slice(0, 3), ...kinds('retry').slice(0, 3)]) {
      const last = latestOf(c);
      const renewed: MockTransaction = {
        ...last,
        transactionId: `${last.transactionId}9`,
        purchaseDate: NOW - 3_600_000,
        expiresDate: NOW + 30 * DAY,
        transactionReason: 'RENEWAL',
      };
      apple.addTransaction(last.transactionId, renewed);
      c.transactions.push(renewed);
      const renewal = { originalTransactionId: last.originalTransactionId, productId: last.productId, autoRenewStatus: 1 };
      apple.setStatus(last.originalTransactionId, { status: 1, renewal });
      c.statuses.set(last.originalTransactionId, { status: 1, renewal });
      const n = {
        notificationType: 'DID_RENEW',
        subtype: 'BILLING_RECOVERY',
        notificationUUID: nextUuid(),
        signedDate: (at += 1000),
        transaction: renewed,
        renewal,
      };
      await postApple(n);
      live.push(tx(NOTIFIED_APPLE, 'app-a', n.notificationUUID, n.signedDate, appleData(renewed, { renewal })));
      if (renewed.appAccountToken)
        live.push(
          link(
            NOTIFIED_APPLE,
            'app-a',
            `${n.notificationUUID}:link`,
            n.signedDate,
            `apple:${renewed.originalTransactionId}`,
            renewed.appAccountToken as string,
          ),
        );
    }
    // Auto-renew turned off, then a refund of the current period for one of them.
    const [off, refunded] = kinds('renewing');
    for (const c of [off, refunded]) {
      const last = latestOf(c);
      const renewal = { originalTransactionId: last.originalTransactionId, productId: last.productId, autoRenewStatus: 0 };
      apple.setStatus(last.originalTransactionId, { status: c === refunded ? 5 : 1, renewal });
      c.statuses.set(last.originalTransactionId, { status: c === refunded ? 5 : 1, renewal });
      const n = {
        notificationType: 'DID_CHANGE_RENEWAL_STATUS',
        subtype: 'AUTO_RENEW_DISABLED',
        notificationUUID: nextUuid(),
        signedDate: (at += 1000),
        transaction: last,
        renewal,
      };
      await postApple(n);
      live.push(tx(NOTIFIED_APPLE, 'app-a', n.notificationUUID, n.signedDate, appleData(last, { renewal, renewalIntentChangeDate: n.signedDate })));
      if (last.appAccountToken)
        live.push(
          link(NOTIFIED_APPLE, 'app-a', `${n.notificationUUID}:link`, n.signedDate, `apple:${last.originalTransactionId}`, last.appAccountToken as string),
        );
    }
    {
      const last = latestOf(refunded);
      last.revocationDate = NOW - 600_000;
      last.revocationReason = 0;
      const renewal = { originalTransactionId: last.originalTransactionId, productId: last.productId, autoRenewStatus: 0 };
      const n = { notificationType: 'REFUND', notificationUUID: nextUuid(), signedDate: (at += 1000), transaction: last, renewal };
      await postApple(n);
      live.push(tx(NOTIFIED_APPLE, 'app-a', n.notificationUUID, n.signedDate, appleData(last, { renewal })));
      if (last.appAccountToken)
        live.push(
          link(NOTIFIED_APPLE, 'app-a', `${n.notificationUUID}:link`, n.signedDate, `apple:${last.originalTransactionId}`, last.appAccountToken as string),
        );
    }

    // Google: renewals and a cancellation, pushed by Pub/Sub; the service fetches the new state.
    const renewable = world.google.filter(
      (p) => p.sub && p.linkedFrom === undefined && p.sub.subscriptionState === 'SUBSCRIPTION_STATE_ACTIVE' && !world.voided.some((v) => v.token === p.token),
    );
    const push = async (purchaseToken: string, type: number, messageId: string) => {
      const body = {
        message: {
          data: Buffer.from(
            JSON.stringify({
              version: '1.0',
              packageName: PACKAGE,
              eventTimeMillis: String(Date.now()),
              subscriptionNotification: { version: '1.0', notificationType: type, purchaseToken, subscriptionId: 'pro_monthly' },
            }),
          ).toString('base64'),
          messageId,
          publishTime: new Date().toISOString(),
        },
        subscription: 'projects/test-project/subscriptions/play-rtdn',
      };
      const res = await fetch(`${api.baseUrl}/v2/notifications/google/app-g`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${google.pushToken({ audience: AUDIENCE })}` },
        body: JSON.stringify(body),
      });
      expect({ messageId, status: res.status }).toEqual({ messageId, status: 200 });
    };
    const started = Date.now();
    for (const [i, p] of renewable.slice(0, 4).entries()) {
      const s = structuredClone(p.sub!);
      const m = /^(.*?)(?:\.\.(\d+))?$/.exec(s.latestOrderId)!;
      s.latestOrderId = `${m[1]}..${m[2] === undefined ? 0 : Number(m[2]) + 1}`;
      const li = s.lineItems[0];
      li.latestSuccessfulOrderId = s.latestOrderId;
      li.expiryTime = iso(Date.parse(li.expiryTime as string) + 30 * DAY);
      google.setSubscription(PACKAGE, p.token, s);
      p.sub = s;
      await push(p.token, 2, `renewed-${i}`);
    }
    {
      const p = renewable[4];
      const s = structuredClone(p.sub!);
      s.subscriptionState = 'SUBSCRIPTION_STATE_CANCELED';
      s.canceledStateContext = { userInitiatedCancellation: { cancelTime: iso(Date.now()) } };
      (s.lineItems[0].autoRenewingPlan as { autoRenewEnabled: boolean }).autoRenewEnabled = false;
      google.setSubscription(PACKAGE, p.token, s);
      p.sub = s;
      await push(p.token, 3, 'canceled-0');
    }
    const window: [number, number] = [started, Date.now()];
    fetchWindows.push(window);
    for (const p of [...renewable.slice(0, 5)]) {
      const d = googleSubData(p.token, p.sub!, false);
      live.push(
        tx(NOTIFIED_GOOGLE, 'app-g', `live-${p.token}`, window[1], d),
        link(NOTIFIED_GOOGLE, 'app-g', `live-${p.token}:link`, window[1], d.receiptId as string, d.applicationUsername as string),
      );
    }
    await expectModelAnswers([...importEvents, ...live]);

    // The imports again (same files): every line is done; nothing is published; the answers stay.
    const size = Number((await db.dataSource.query(`SELECT count(*)::int AS n FROM public.event_log`))[0].n);
    const again = await runImports();
    expect(again.a.stderr).toContain(`imported 0 line(s) (0 event(s)), unchanged ${world.apple.length}`);
    expect(again.g.stderr).toContain(`imported 0 line(s) (0 event(s)), unchanged ${googleLines.length}`);
    expect(again.v.stderr).toContain(`imported 0 line(s)`);
    expect([again.a.code, again.g.code, again.v.code]).toEqual([0, 0, 0]);
    expect(Number((await db.dataSource.query(`SELECT count(*)::int AS n FROM public.event_log`))[0].n)).toBe(size);
    await expectModelAnswers([...importEvents, ...live]);

    // Another file naming the customers the notifications touched (a new digest: every line asked
    // again), answered by the App Store as it stood just before the notifications (signed then: the
    // auto-renew change not yet in it), and by Google as it stands now: the stale App Store state
    // loses to the notifications, the rest agrees; the reference decides with these events added.
    appleSignedAt = SIGNED + 1000;
    const stale = {
      status: 1,
      renewal: { originalTransactionId: latestOf(off).originalTransactionId, productId: latestOf(off).productId, autoRenewStatus: 1 },
    };
    apple.setStatus(latestOf(off).originalTransactionId, stale);
    off.statuses.set(latestOf(off).originalTransactionId, stale);
    const touched = [...kinds('grace').slice(0, 3), ...kinds('retry').slice(0, 3), off, refunded];
    const appleAgain = await runCli(
      [
        'import',
        'apple',
        '--app',
        'app-a',
        '--file',
        writeTempFile('again.csv', touched.map((c) => [latestOf(c).transactionId, ...(c.csvName ? [c.csvName] : [])].join(',')).join('\n') + '\n'),
      ],
      cliEnv,
    );
    expect(appleAgain.stderr).toContain(`imported ${touched.length} line(s)`);
    const googleStarted = Date.now();
    const googleAgain = await runCli(
      [
        'import',
        'google',
        '--app',
        'app-g',
        '--file',
        writeTempFile(
          'again.csv',
          renewable
            .slice(0, 5)
            .map((p) => p.token)
            .join('\n') + '\n',
        ),
      ],
      cliEnv,
    );
    const googleWindow: [number, number] = [googleStarted, Date.now()];
    fetchWindows.push(googleWindow);
    expect(googleAgain.stderr).toContain('imported 5 line(s)');
    expect([appleAgain.code, googleAgain.code]).toEqual([0, 0]);
    const reimported = [
      ...touched.flatMap((c) => appleImportEvents(c, SIGNED + 1000)),
      ...googleImportEvents(renewable.slice(0, 5), [], googleWindow[0]).map((e) => ({ ...e, id: `again-${e.id}` })),
    ];
    const offUser = off.username ?? off.csvName!;
    expect((await api.get(`/v2/customers?applicationUsername=${offUser}`, api.token('app-a'))).body.rows[0].customerInfo).toMatchObject({
      renewalIntent: 'Lapse',
    });
    await expectModelAnswers([...importEvents, ...live, ...reimported]);
  });
});
