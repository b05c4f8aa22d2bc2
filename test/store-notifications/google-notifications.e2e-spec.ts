import { jest } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { startTestApp, type TestApp } from '../utils/app.js';
import { embeddedLogCaughtUp } from '../utils/events.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { startGooglePlayMock } from '../utils/google-play-mock.js';
import { writeTempFile } from '../utils/processes.js';

jest.setTimeout(120_000);

const PACKAGE = 'com.example.game';
const AUDIENCE = 'https://records.example.com/v2/notifications/google/app-1';
const DAY = 86_400_000;
const at = (offsetMs: number) => new Date(Date.now() + offsetMs).toISOString();
type Row = Record<string, unknown>;

/** A SubscriptionPurchaseV2 as purchases.subscriptionsv2.get returns it (documented field names). */
function subscription(
  user: string,
  o: { state?: string; order: string; expires: string; autoRenew?: boolean; linked?: string; canceled?: object; trial?: boolean },
) {
  return {
    kind: 'androidpublisher#subscriptionPurchaseV2',
    regionCode: 'DE',
    startTime: at(-40 * DAY),
    subscriptionState: o.state ?? 'SUBSCRIPTION_STATE_ACTIVE',
    latestOrderId: o.order,
    acknowledgementState: 'ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED',
    externalAccountIdentifiers: { obfuscatedExternalAccountId: user },
    testPurchase: {},
    ...(o.linked ? { linkedPurchaseToken: o.linked } : {}),
    ...(o.canceled ? { canceledStateContext: o.canceled } : {}),
    lineItems: [
      {
        productId: 'pro_monthly',
        expiryTime: o.expires,
        autoRenewingPlan: { autoRenewEnabled: o.autoRenew ?? true, recurringPrice: { currencyCode: 'EUR', units: '4', nanos: 990000000 } },
        offerDetails: { basePlanId: 'monthly', offerId: o.trial ? 'free-week' : undefined, offerTags: [] },
        ...(o.trial ? { offerPhase: { freeTrial: {} } } : { offerPhase: { basePrice: {} } }),
        latestSuccessfulOrderId: o.order,
      },
    ],
  };
}

describe('Google Play RTDN in (e2e: real PostgreSQL, embedded log, Play Developer API on loopback)', () => {
  let db: TestDatabase;
  let api: TestApp;
  let google: Awaited<ReturnType<typeof startGooglePlayMock>>;
  let token: string;
  let messages = 0;

  beforeAll(async () => {
    google = await startGooglePlayMock();
    db = await createTestDatabase('google');
    api = await startTestApp({
      databaseUrl: db.url,
      env: {
        CONSUMER_ENABLED: 'true',
        GOOGLE_APPS: `app-1:${PACKAGE}`,
        GOOGLE_PUBSUB_AUDIENCE: AUDIENCE,
        GOOGLE_PUBSUB_JWKS_URI: google.jwksUri,
        GOOGLE_PUBSUB_SERVICE_ACCOUNT: 'pubsub-push@test-project.iam.gserviceaccount.com',
        GOOGLE_SERVICE_ACCOUNT_FILE: writeTempFile('play-key.json', google.serviceAccountKey),
        GOOGLE_API_BASE_URL: google.base,
        GOOGLE_API_SELF_SIGNED_JWT: 'true',
      },
    });
    token = api.token('app-1');
  });
  afterAll(async () => {
    await api?.close();
    await db?.drop();
    await google?.close();
  });

  const push = (notification: object, o: { messageId?: string; auth?: string | null; packageName?: string } = {}) => {
    const body = {
      message: {
        data: Buffer.from(
          JSON.stringify({ version: '1.0', packageName: o.packageName ?? PACKAGE, eventTimeMillis: String(Date.now()), ...notification }),
        ).toString('base64'),
        messageId: o.messageId ?? String(++messages + 1_000_000),
        publishTime: new Date().toISOString(),
      },
      subscription: 'projects/test-project/subscriptions/play-rtdn',
    };
    const auth = o.auth === undefined ? `Bearer ${google.pushToken({ audience: AUDIENCE })}` : o.auth;
    return fetch(`${api.baseUrl}/v2/notifications/google/app-1`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}) },
      body: JSON.stringify(body),
    }).then(async (r) => ({ status: r.status, headers: r.headers, body: (await r.json()) as any }));
  };
  const subNotification = (type: number, purchaseToken: string) => ({
    subscriptionNotification: { version: '1.0', notificationType: type, purchaseToken, subscriptionId: 'pro_monthly' },
  });
  const logSize = async () => Number((await db.dataSource.query(`SELECT count(*)::int AS n FROM public.event_log`))[0].n);
  const caughtUp = () => embeddedLogCaughtUp(db.dataSource);
  const published = async (notification: object, o: Parameters<typeof push>[1] = {}) => {
    const res = await push(notification, o);
    expect(res).toMatchObject({ status: 200, body: { status: 'published' } });
    await caughtUp();
  };
  const customer = async (user: string) => (await api.get(`/v2/customers?applicationUsername=${user}`, token)).body.rows[0];
  const transaction = async (id: string) => ((await api.get('/v2/transactions?limit=1000', token)).body.rows as Row[]).find((t) => t.transactionId === id);

  it('SUBSCRIPTION_PURCHASED then RENEWED: active, each charge its own order, the renewal filed when it was learned of', async () => {
    const [u, purchase] = [randomUUID(), `tok-${randomUUID()}`];
    google.setSubscription(PACKAGE, purchase, subscription(u, { order: 'GPA.1111-2222-3333-44444', expires: at(-10 * DAY), trial: true }));
    await published(subNotification(4, purchase));
    expect(await transaction('google:GPA.1111-2222-3333-44444')).toMatchObject({
      purchaseId: 'google:GPA.1111-2222-3333-44444',
      productId: 'google:pro_monthly',
      receiptId: `google:${purchase}`,
      sandbox: true,
      isTrialPeriod: true,
      isIntroPeriod: false,
      discountId: 'free-week',
      isAcknowledged: true,
      amountMicros: 4990000,
      currency: 'EUR',
    });
    expect((await customer(u)).customerInfo).toMatchObject({ activeSubscriber: false });

    const renewedAt = Date.now();
    google.setSubscription(PACKAGE, purchase, subscription(u, { order: 'GPA.1111-2222-3333-44444..1', expires: at(20 * DAY) }));
    await published(subNotification(2, purchase));
    const renewal = await transaction('google:GPA.1111-2222-3333-44444..1');
    expect(renewal).toMatchObject({ purchaseId: 'google:GPA.1111-2222-3333-44444', renewalIntent: 'Renew' });
    expect(renewal!.purchaseDate).toBeUndefined();
    const day = new Date(renewedAt).toISOString().slice(0, 10);
    const filed = await api.get(`/v2/transactions?startdate=${day}T00:00:00Z&limit=1000`, token);
    expect(filed.body.rows.map((t: Row) => t.transactionId)).toContain('google:GPA.1111-2222-3333-44444..1');
    expect((await customer(u)).customerInfo).toMatchObject({ activeSubscriber: true, renewalIntent: 'Renew' });
    expect((await customer(u)).receiptIds).toEqual([`google:${purchase}`]);
  });

  it('GPA.x, GPA.x..0, GPA.x..1: the first renewal is ..0, filed when it was charged, not at the original purchase', async () => {
    // Google's order numbers: base order, then ..0 (first recurrence), ..1 (second), ... ("Subscription order numbers").
    const [u, purchase] = [randomUUID(), `tok-${randomUUID()}`];
    const base = `GPA.${String(Date.now()).slice(-4)}-0000-0000-00000`;
    google.setSubscription(PACKAGE, purchase, subscription(u, { order: base, expires: at(-10 * DAY) }));
    await published(subNotification(4, purchase));
    const startDay = at(-40 * DAY).slice(0, 10);
    const chargedToday = new Date().toISOString().slice(0, 10);
    for (const [i, order] of [`${base}..0`, `${base}..1`].entries()) {
      google.setSubscription(PACKAGE, purchase, subscription(u, { order, expires: at((20 + 30 * i) * DAY) }));
      await published(subNotification(2, purchase));
      const renewal = await transaction(`google:${order}`);
      expect(renewal).toMatchObject({ purchaseId: `google:${base}`, receiptId: `google:${purchase}` });
      expect(renewal!.purchaseDate).toBeUndefined();
    }
    const ids = async (from: string, to: string) =>
      ((await api.get(`/v2/transactions?startdate=${from}T00:00:00Z&enddate=${to}T00:00:00Z&limit=1000`, token)).body.rows as Row[]).map(
        (t) => t.transactionId,
      );
    const dayAfter = (day: string) => new Date(Date.parse(`${day}T00:00:00Z`) + DAY).toISOString().slice(0, 10);
    // the first order on the subscription's first day, each renewal on the day it was charged (today here)
    const onStartDay = await ids(startDay, dayAfter(startDay));
    expect(onStartDay).toContain(`google:${base}`);
    expect(onStartDay).not.toContain(`google:${base}..0`);
    expect(await ids(chargedToday, dayAfter(chargedToday))).toEqual(expect.arrayContaining([`google:${base}..0`, `google:${base}..1`]));
    expect((await customer(u)).customerInfo).toMatchObject({ activeSubscriber: true, lastPurchaseDate: expect.stringMatching(new RegExp(`^${chargedToday}`)) });
  });

  // Every subscription notification type, with the state Google reports after it (the mapping reads the state).
  it.each([
    [1, 'RECOVERED', 'SUBSCRIPTION_STATE_ACTIVE', true, {}],
    [2, 'RENEWED', 'SUBSCRIPTION_STATE_ACTIVE', true, {}],
    [3, 'CANCELED', 'SUBSCRIPTION_STATE_CANCELED', true, { autoRenew: false, canceled: { userInitiatedCancellation: { cancelTime: at(-DAY) } } }],
    [4, 'PURCHASED', 'SUBSCRIPTION_STATE_ACTIVE', true, {}],
    [5, 'ON_HOLD', 'SUBSCRIPTION_STATE_ON_HOLD', false, { expires: at(-2 * DAY) }],
    [6, 'IN_GRACE_PERIOD', 'SUBSCRIPTION_STATE_IN_GRACE_PERIOD', true, {}],
    [7, 'RESTARTED', 'SUBSCRIPTION_STATE_ACTIVE', true, {}],
    [8, 'PRICE_CHANGE_CONFIRMED', 'SUBSCRIPTION_STATE_ACTIVE', true, { priceChange: 'CONFIRMED' }],
    [9, 'DEFERRED', 'SUBSCRIPTION_STATE_ACTIVE', true, { expires: at(60 * DAY) }],
    [10, 'PAUSED', 'SUBSCRIPTION_STATE_PAUSED', false, { expires: at(5 * DAY) }],
    [11, 'PAUSE_SCHEDULE_CHANGED', 'SUBSCRIPTION_STATE_ACTIVE', true, {}],
    [12, 'REVOKED', 'SUBSCRIPTION_STATE_EXPIRED', false, { expires: at(-DAY), autoRenew: false, canceled: { developerInitiatedCancellation: {} } }],
    [13, 'EXPIRED', 'SUBSCRIPTION_STATE_EXPIRED', false, { expires: at(-DAY), autoRenew: false }],
    [19, 'PRICE_CHANGE_UPDATED', 'SUBSCRIPTION_STATE_ACTIVE', true, { priceChange: 'OUTSTANDING' }],
    [20, 'PENDING_PURCHASE_CANCELED', 'SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED', false, {}],
    [4, 'PURCHASED (pending payment)', 'SUBSCRIPTION_STATE_PENDING', false, {}],
  ] as [number, string, string, boolean, Partial<Parameters<typeof subscription>[1]> & { priceChange?: string }][])(
    'SUBSCRIPTION_%s (%s) → state %s: active %s',
    async (type, _name, state, active, extra) => {
      const [u, purchase] = [randomUUID(), `tok-${randomUUID()}`];
      const order = `GPA.${randomUUID().slice(0, 8)}`;
      const { priceChange, ...rest } = extra;
      const fetched = subscription(u, { state, order, expires: at(6 * DAY), ...rest });
      if (priceChange)
        (fetched.lineItems[0].autoRenewingPlan as Record<string, unknown>).priceChangeDetails = {
          priceChangeState: priceChange,
          newPrice: { currencyCode: 'EUR', units: '5', nanos: 990000000 },
        };
      google.setSubscription(PACKAGE, purchase, fetched);
      await published(subNotification(type, purchase));
      const info = (await customer(u)).customerInfo;
      expect(info.activeSubscriber ?? false).toBe(active);
      const row = await transaction(`google:${order}`);
      if (state === 'SUBSCRIPTION_STATE_CANCELED') {
        expect(info.renewalIntent).toBe('Lapse');
        expect(row).toMatchObject({ cancelationReason: 'Customer' });
      }
      if (state === 'SUBSCRIPTION_STATE_IN_GRACE_PERIOD')
        expect(row).toMatchObject({ isBillingRetryPeriod: true, gracePeriodExpirationDate: expect.any(String) });
      if (state.startsWith('SUBSCRIPTION_STATE_PENDING')) expect(row).toMatchObject({ isPending: true });
      if (type === 12) expect(row).toMatchObject({ cancelationReason: 'Developer', isExpired: true });
      if (priceChange) expect(row).toMatchObject({ priceConsentStatus: priceChange === 'CONFIRMED' ? 'Accepted' : 'Notified' });
    },
  );

  it('an upgrade (linkedPurchaseToken) marks the replaced purchase isUpgraded; the new one drives the summary', async () => {
    const [u, oldToken, newToken] = [randomUUID(), `tok-${randomUUID()}`, `tok-${randomUUID()}`];
    google.setSubscription(PACKAGE, oldToken, subscription(u, { order: 'GPA.5555-0000-0000-00001', expires: at(200 * DAY) }));
    await published(subNotification(4, oldToken));
    google.setSubscription(
      PACKAGE,
      oldToken,
      subscription(u, {
        state: 'SUBSCRIPTION_STATE_EXPIRED',
        order: 'GPA.5555-0000-0000-00001',
        expires: at(200 * DAY),
        autoRenew: false,
        canceled: { replacementCancellation: {} },
      }),
    );
    google.setSubscription(PACKAGE, newToken, subscription(u, { order: 'GPA.6666-0000-0000-00001', expires: at(30 * DAY), linked: oldToken }));
    await published(subNotification(4, newToken));
    expect(await transaction('google:GPA.5555-0000-0000-00001')).toMatchObject({ isUpgraded: true, cancelationReason: 'System.Replaced' });
    const info = (await customer(u)).customerInfo;
    expect(info.activeSubscriber).toBe(true);
    expect(Date.parse(info.expirationDate)).toBeLessThan(Date.now() + 31 * DAY);
  });

  it('a one-time product comes from purchases.products.get; a voided purchase revokes the order it names', async () => {
    const [u, purchase] = [randomUUID(), `tok-${randomUUID()}`];
    google.setProduct(PACKAGE, 'coins_500', purchase, {
      kind: 'androidpublisher#productPurchase',
      purchaseTimeMillis: String(Date.now() - DAY),
      purchaseState: 0,
      consumptionState: 1,
      orderId: 'GPA.7777-0000-0000-00001',
      purchaseType: 0,
      acknowledgementState: 1,
      obfuscatedExternalAccountId: u,
      quantity: 2,
      regionCode: 'DE',
    });
    await published({ oneTimeProductNotification: { version: '1.0', notificationType: 1, purchaseToken: purchase, sku: 'coins_500' } });
    expect(await transaction('google:GPA.7777-0000-0000-00001')).toMatchObject({ productId: 'google:coins_500', isConsumed: true, quantity: 2, sandbox: true });
    expect((await customer(u)).customerInfo.activeSubscriber).toBe(false);

    const [s, subToken] = [randomUUID(), `tok-${randomUUID()}`];
    // in its grace period: the row shows isBillingRetryPeriod and gracePeriodExpirationDate, which the void must keep
    google.setSubscription(
      PACKAGE,
      subToken,
      subscription(s, { order: 'GPA.8888-0000-0000-00001', expires: at(3 * DAY), state: 'SUBSCRIPTION_STATE_IN_GRACE_PERIOD' }),
    );
    await published(subNotification(4, subToken));
    expect((await customer(s)).customerInfo.activeSubscriber).toBe(true);
    const before = await transaction('google:GPA.8888-0000-0000-00001');
    expect(before).toMatchObject({ isBillingRetryPeriod: true, gracePeriodExpirationDate: expect.any(String) });
    await published({ voidedPurchaseNotification: { purchaseToken: subToken, orderId: 'GPA.8888-0000-0000-00001', productType: 1, refundType: 1 } });
    // the voided order keeps everything else it showed (the newest snapshot replaces the row whole)
    expect(await transaction('google:GPA.8888-0000-0000-00001')).toEqual({
      ...before,
      revocationDate: expect.any(String),
      revocationType: 'REFUND_FULL',
      isExpired: true,
      cancelationReason: 'Customer',
      // refunded whole: nothing is kept (docs/revenue.md)
      refundedShare: 1,
      proceedsMicros: 0,
      // the void said something new: it is where the row's state now comes from
      provenance: { kind: 'store-notification', source: 'google-play-rtdn', eventId: expect.stringMatching(/:voided$/), receivedAt: expect.any(String) },
    });
    expect((await customer(s)).customerInfo.activeSubscriber).toBe(false);
  });

  it('every current subscription notification type is mapped from the fetched state, never a 5xx; a quantity-based partial refund revokes nothing', async () => {
    // Types per Google's RTDN reference (developer.android.com/google/play/billing/rtdn-reference):
    // 1-13, 17 SUBSCRIPTION_ITEMS_CHANGED, 18 SUBSCRIPTION_CANCELLATION_SCHEDULED, 19 SUBSCRIPTION_PRICE_CHANGE_UPDATED,
    // 20 SUBSCRIPTION_PENDING_PURCHASE_CANCELED, 22 SUBSCRIPTION_PRICE_STEP_UP_CONSENT_UPDATED; 99 stands for a type added later.
    const [u, purchase] = [randomUUID(), `tok-${randomUUID()}`];
    const order = `GPA.${String(Date.now()).slice(-4)}-1717-0000-00000`;
    google.setSubscription(PACKAGE, purchase, subscription(u, { order, expires: at(20 * DAY) }));
    for (const type of [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 17, 18, 19, 22, 99]) {
      const res = await push(subNotification(type, purchase));
      expect({ type, status: res.status, body: res.body }).toEqual({ type, status: 200, body: { status: 'published', events: 2 } });
    }
    await caughtUp();
    expect((await customer(u)).customerInfo).toMatchObject({ activeSubscriber: true });

    // 20: a pending purchase canceled before it was paid for grants nothing
    const [p, pending] = [randomUUID(), `tok-${randomUUID()}`];
    google.setSubscription(
      PACKAGE,
      pending,
      subscription(p, { order: `${order}9`, expires: at(20 * DAY), state: 'SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED' }),
    );
    await published(subNotification(20, pending));
    expect(await transaction(`google:${order}9`)).toMatchObject({ isPending: true, isExpired: true });
    expect((await customer(p)).customerInfo.activeSubscriber).toBe(false);

    // refundType 2 (QUANTITY_BASED_PARTIAL_REFUND): the rest of the order stays paid for
    const [c, coins] = [randomUUID(), `tok-${randomUUID()}`];
    const coinOrder = `GPA.${String(Date.now()).slice(-4)}-2222-0000-00001`;
    google.setProduct(PACKAGE, 'coins_500', coins, {
      kind: 'androidpublisher#productPurchase',
      purchaseTimeMillis: String(Date.now() - DAY),
      purchaseState: 0,
      orderId: coinOrder,
      purchaseType: 0,
      obfuscatedExternalAccountId: c,
      quantity: 3,
    });
    await published({ oneTimeProductNotification: { version: '1.0', notificationType: 1, purchaseToken: coins, sku: 'coins_500' } });
    const before = await transaction(`google:${coinOrder}`);
    const partial = await push({ voidedPurchaseNotification: { purchaseToken: coins, orderId: coinOrder, productType: 2, refundType: 2 } });
    expect(partial).toMatchObject({ status: 200, body: { status: 'acknowledged', events: 0 } });
    await caughtUp();
    expect(await transaction(`google:${coinOrder}`)).toEqual(before);
    await published({ voidedPurchaseNotification: { purchaseToken: coins, orderId: coinOrder, productType: 2, refundType: 1 } });
    expect(await transaction(`google:${coinOrder}`)).toMatchObject({ revocationDate: expect.any(String), isExpired: true });
  });

  it('acknowledges a test notification and a purchase Google does not know; a redelivered message is fetched again and its state, a newer snapshot, wins (unchanged state: nothing changes)', async () => {
    const before = await logSize();
    expect(await push({ testNotification: { version: '1.0' } })).toMatchObject({ status: 200, body: { status: 'acknowledged' } });
    expect(await push(subNotification(4, 'tok-nobody-knows'))).toMatchObject({ status: 200, body: { status: 'acknowledged' } });
    expect(await logSize()).toBe(before);

    const [u, purchase] = [randomUUID(), `tok-${randomUUID()}`];
    google.setSubscription(PACKAGE, purchase, subscription(u, { order: 'GPA.9999-0000-0000-00001', expires: at(9 * DAY) }));
    await published(subNotification(4, purchase), { messageId: 'redelivered-1' });
    const first = await customer(u);
    const rows = (await api.get('/v2/transactions?limit=1000', token)).body;
    // Pub/Sub redelivers the same message: the purchase is fetched again; Google's state is the same
    await published(subNotification(4, purchase), { messageId: 'redelivered-1' });
    expect(await customer(u)).toEqual(first);
    expect((await api.get('/v2/transactions?limit=1000', token)).body).toEqual(rows);
    // Redelivered once more after the user turned auto-renew off: a later fetch is a newer snapshot
    // (docs/events/google.md), so what Google says now is what the rows show (issue 26: ids no longer claimed)
    google.setSubscription(PACKAGE, purchase, subscription(u, { order: 'GPA.9999-0000-0000-00001', expires: at(9 * DAY), autoRenew: false }));
    await published(subNotification(4, purchase), { messageId: 'redelivered-1' });
    expect(await transaction('google:GPA.9999-0000-0000-00001')).toMatchObject({ renewalIntent: 'Lapse' });
    expect(await customer(u)).toMatchObject({ applicationUsername: u, receiptIds: first.receiptIds });
  });

  it('refuses a push without a valid OIDC token (401) or for another package (400), publishing nothing', async () => {
    const before = await logSize();
    const n = subNotification(4, 'tok-x');
    const cases: [Parameters<typeof push>[1], number, string, RegExp][] = [
      [{ auth: null }, 401, 'token_missing', /no bearer token/],
      [{ auth: `Bearer ${google.pushToken({ audience: AUDIENCE, forged: true })}` }, 401, 'token_invalid', /invalid signature/],
      [{ auth: `Bearer ${google.pushToken({ audience: 'https://elsewhere.example.com' })}` }, 401, 'token_invalid', /audience invalid/],
      [{ auth: `Bearer ${google.pushToken({ audience: AUDIENCE, issuer: 'https://evil.example.com' })}` }, 401, 'token_invalid', /issuer invalid/],
      [{ auth: `Bearer ${google.pushToken({ audience: AUDIENCE, expiresIn: -10 })}` }, 401, 'token_invalid', /jwt expired/],
      [
        { auth: `Bearer ${google.pushToken({ audience: AUDIENCE, email: 'someone@else.iam.gserviceaccount.com' })}` },
        401,
        'token_invalid',
        /GOOGLE_PUBSUB_SERVICE_ACCOUNT/,
      ],
      [{ packageName: 'com.example.other' }, 400, 'notification_unverified', /not com\.example\.game/],
    ];
    for (const [o, status, code, detail] of cases) {
      const res = await push(n, o);
      expect({ status: res.status, code: res.body.code }).toEqual({ status, code });
      expect(res.body.detail).toMatch(detail);
    }
    expect(await logSize()).toBe(before);
  });

  it('refuses an eventTimeMillis outside the years 0001-9999 with 422 notification_unmappable, never 500', async () => {
    const [u, purchase] = [randomUUID(), `tok-${randomUUID()}`];
    google.setSubscription(PACKAGE, purchase, subscription(u, { order: 'GPA.4444-0000-0000-00001', expires: at(9 * DAY) }));
    await published(subNotification(4, purchase));
    const before = await logSize();
    // The voided order is in the read models: its revocationDate would be this time (a RangeError, 500, before).
    for (const eventTimeMillis of ['100000000000000000000', '8640000000000001', '-8640000000000001', '253402300800000', 'soon', '1e20']) {
      const res = await push({
        eventTimeMillis,
        voidedPurchaseNotification: { purchaseToken: purchase, orderId: 'GPA.4444-0000-0000-00001', productType: 1, refundType: 1 },
      });
      expect({ eventTimeMillis, status: res.status, code: res.body.code }).toEqual({ eventTimeMillis, status: 422, code: 'notification_unmappable' });
      expect(res.body.detail).toContain('eventTimeMillis');
    }
    expect(await logSize()).toBe(before);
    expect((await customer(u)).customerInfo.activeSubscriber).toBe(true);
  });

  it('answers 503 with Retry-After when the Play Developer API fails, and publishes when Pub/Sub retries', async () => {
    const [u, purchase] = [randomUUID(), `tok-${randomUUID()}`];
    google.setSubscription(PACKAGE, purchase, subscription(u, { order: 'GPA.1212-0000-0000-00001', expires: at(9 * DAY) }));
    google.failNextCalls(1);
    const failed = await push(subNotification(4, purchase), { messageId: 'retried-1' });
    expect(failed).toMatchObject({ status: 503, body: { code: 'store_api_unavailable' } });
    expect(failed.headers.get('retry-after')).toBe('5');
    await published(subNotification(4, purchase), { messageId: 'retried-1' });
    expect((await customer(u)).customerInfo.activeSubscriber).toBe(true);
    expect(google.calls.some((c) => c.includes(`/subscriptionsv2/tokens/${purchase}`))).toBe(true);
  });
});
