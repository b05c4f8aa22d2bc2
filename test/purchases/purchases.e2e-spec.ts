import { jest } from '@jest/globals';
import { createHmac, randomUUID, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAppleTestCa, signAppleJws, type AppleTestCa } from '../../src/store-notifications/apple/apple-test-ca.js';
import { addEndpoint } from '../../src/webhooks/webhook-endpoints.js';
import { startAppleStoreMock, type AppleStoreMock } from '../utils/apple-store-mock.js';
import { startTestApp, TEST_SECRET, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { embeddedLogCaughtUp } from '../utils/events.js';
import { expectEventually } from '../utils/expect-eventually.js';
import { startGooglePlayMock } from '../utils/google-play-mock.js';
import { writeTempFile } from '../utils/processes.js';
import { startReceiver } from '../utils/webhook-receiver.js';
import { withDefiniteLengths } from '../utils/definite-length.js';
import { ReferenceModel, type RawEvent } from '../model/reference-model.js';
import { expectEqualsFromScratch } from '../utils/read-models.js';
import { mintToken } from '../../src/auth/mint-token.js';

jest.setTimeout(180_000);

// POST /v2/purchases over HTTP, on a fresh service (real PostgreSQL, embedded log, its consumer),
// with the App Store and Google Play as loopback mocks answering in their documented shapes.
const BUNDLE = 'com.example.naturelab.backyardbirds.example';
const PACKAGE = 'com.example.birds';
const DAY = 86_400_000;
const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures');

let ca: AppleTestCa;
let otherCa: AppleTestCa;
let expiredCa: AppleTestCa;
let apple: AppleStoreMock;
let google: Awaited<ReturnType<typeof startGooglePlayMock>>;
let db: TestDatabase;
let api: TestApp;
let seq = 2_000_000_000;
const nextId = () => String(++seq);

/**
 * Transaction.jwsRepresentation of a new monthly subscription, shaped from Apple's library's test
 * resource tests/resources/xcode/xcode-signed-transaction (its fields, a Sandbox environment).
 */
function storeKit2Transaction(o: { id?: string; bundleId?: string; appAccountToken?: string; signer?: AppleTestCa; purchased?: number } = {}) {
  const id = o.id ?? nextId();
  const purchased = o.purchased ?? Date.now() - 60_000;
  const payload = {
    inAppOwnershipType: 'PURCHASED',
    purchaseDate: purchased,
    subscriptionGroupIdentifier: '6F3A93AB',
    signedDate: purchased + 7,
    originalPurchaseDate: purchased,
    isUpgraded: false,
    deviceVerification: 'sGDnpg+ozb8uwDSuCDZ2oVZo1CKrbB8ujR8VxCxhykRwyBIK6x6XCyERm8yWrzE8',
    quantity: 1,
    transactionId: id,
    type: 'Auto-Renewable Subscription',
    transactionReason: 'PURCHASE',
    productId: 'pass.premium',
    expiresDate: purchased + 30 * DAY,
    environment: 'Sandbox',
    storefrontId: '143441',
    originalTransactionId: id,
    bundleId: o.bundleId ?? BUNDLE,
    deviceVerificationNonce: randomUUID(),
    webOrderLineItemId: nextId(),
    storefront: 'USA',
    price: 4990,
    currency: 'USD',
    ...(o.appAccountToken ? { appAccountToken: o.appAccountToken } : {}),
  };
  return { id, payload, jws: signAppleJws(o.signer ?? ca, payload) };
}

const userToken = (app: string, username: string) =>
  mintToken({
    secret: TEST_SECRET,
    appId: app,
    scopes: ['purchases:write'],
    ttlSeconds: 600,
    username,
    issuer: api.config.jwt.issuer,
    audience: api.config.jwt.audience,
  });
const backendToken = (app: string) => api.token(app, ['purchases:write']);

async function post(body: unknown, token: string, o: { contentType?: string; raw?: string; path?: string } = {}) {
  const r = await fetch(`${api.baseUrl}${o.path ?? '/v2/purchases'}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': o.contentType ?? 'application/json' },
    body: o.raw ?? JSON.stringify(body),
  });
  const text = await r.text();
  let json: any = text;
  try {
    json = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: r.status, headers: r.headers, body: json };
}

const logSize = async () => Number((await db.dataSource.query(`SELECT count(*)::int AS n FROM public.event_log`))[0].n);
const customer = async (app: string, user: string) =>
  (await api.get(`/v2/customers?applicationUsername=${encodeURIComponent(user)}`, api.token(app))).body.rows[0];

describe('POST /v2/purchases (e2e: real PostgreSQL, embedded log, store mocks)', () => {
  beforeAll(async () => {
    [ca, otherCa, expiredCa] = await Promise.all([
      createAppleTestCa(),
      createAppleTestCa(),
      createAppleTestCa({ notBefore: new Date(Date.UTC(2019, 0, 1)), notAfter: new Date(Date.UTC(2020, 0, 1)) }),
    ]);
    apple = await startAppleStoreMock({ ca, bundleId: BUNDLE });
    google = await startGooglePlayMock();
    db = await createTestDatabase('purchases');
    api = await startTestApp({
      databaseUrl: db.url,
      env: {
        CONSUMER_ENABLED: 'true',
        APPLE_ROOT_CERTIFICATES: [ca, expiredCa].map((c, i) => writeTempFile(`apple-root-${i}.pem`, new X509Certificate(c.root).toString())).join(','),
        APPLE_APPS: `app-1:${BUNDLE}:Sandbox,app-keep:${BUNDLE}:Sandbox,app-k:${BUNDLE}:Sandbox`,
        APPLE_API_KEYS: `app-k:57246542-96fe-1a63-e053-0824d011072a:TEST123:${writeTempFile('key.p8', apple.privateKeyPem)}`,
        APPLE_API_BASE_URL: apple.base,
        GOOGLE_APPS: `app-g:${PACKAGE}`,
        GOOGLE_PUBSUB_AUDIENCE: 'https://records.example.com/v2/notifications/google/app-g',
        GOOGLE_SERVICE_ACCOUNT_FILE: writeTempFile('play-key.json', google.serviceAccountKey),
        GOOGLE_API_BASE_URL: google.base,
        GOOGLE_API_SELF_SIGNED_JWT: 'true',
        PURCHASE_OWNERSHIP_BY_APP: 'app-keep:keep',
        WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
        WEBHOOK_POLL_MS: '50',
        WEBHOOK_RETRY_BASE_MS: '50',
      },
    });
  });
  afterAll(async () => {
    await api?.close();
    await db?.drop();
    await apple?.close();
    await google?.close();
  });

  it('a StoreKit 2 transaction from the app, for a non-UUID username: 200 with the customer active; the same POST again publishes nothing and answers the same', async () => {
    const username = `alice+${randomUUID().slice(0, 8)}@example.com`;
    const t = storeKit2Transaction();
    const first = await post({ signedTransaction: t.jws }, userToken('app-1', username));
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({
      status: 'recorded',
      customer: {
        applicationUsername: username,
        customerInfo: { activeSubscriber: true, expirationDate: new Date(t.payload.expiresDate).toISOString() },
        receiptIds: [`apple:${t.id}`],
      },
    });
    expect(first.body.transactions).toEqual([
      expect.objectContaining({
        transactionId: `apple:${t.id}`,
        purchaseId: `apple:${t.id}`,
        productId: 'apple:pass.premium',
        platform: 'apple',
        sandbox: true,
        amountMicros: 4_990_000,
        currency: 'USD',
      }),
    ]);
    // docs/api.md, "Provenance": the row's state came from the app's purchase
    expect(first.body.transactions[0].provenance).toMatchObject({ kind: 'app-purchase', source: 'subscription-records-purchases' });
    expect(first.body.appAccountToken).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);

    const before = await logSize();
    const again = await post({ signedTransaction: t.jws }, userToken('app-1', username));
    expect(again).toMatchObject({ status: 200 });
    expect(again.body).toEqual(first.body);
    expect(await logSize()).toBe(before);
  });

  it("Apple's later notification carrying the derived appAccountToken stays with the same user, and no customer is named by the token", async () => {
    const username = `user-${nextId()}`;
    const t = storeKit2Transaction();
    const recorded = await post({ signedTransaction: t.jws }, userToken('app-1', username));
    expect(recorded.status).toBe(200);
    const token = recorded.body.appAccountToken as string;
    const renewedAt = Date.now() - 1000;
    const res = await appleDidRenew(t, token, renewedAt);
    expect(res.status).toBe(200);
    await embeddedLogCaughtUp(db.dataSource);
    expect(await customer('app-1', username)).toMatchObject({
      receiptIds: [`apple:${t.id}`],
      customerInfo: { activeSubscriber: true, expirationDate: new Date(renewedAt + 30 * DAY).toISOString(), renewalIntent: 'Renew' },
    });
    expect(await customer('app-1', token)).toBeUndefined();
    const [logged] = await db.dataSource.query(
      `SELECT convert_from(value, 'UTF8')::jsonb -> 'data' ->> 'applicationUsername' AS name FROM public.event_log
       WHERE convert_from(value, 'UTF8')::jsonb ->> 'type' = 'receipt.linked' AND convert_from(value, 'UTF8')::jsonb -> 'data' ->> 'receiptId' = $1
       ORDER BY "offset" DESC LIMIT 1`,
      [`apple:${t.id}`],
    );
    expect(logged.name).toBe(username);
  });

  it('erasing the customer forgets their account token', async () => {
    const username = `erased-${nextId()}@example.com`;
    const recorded = await post({ signedTransaction: storeKit2Transaction().jws }, userToken('app-1', username));
    expect(recorded.status).toBe(200);
    const remembered = () => db.dataSource.query(`SELECT 1 FROM public.account_tokens WHERE app_id = 'app-1' AND token = $1`, [recorded.body.appAccountToken]);
    expect(await remembered()).toHaveLength(1);
    const erased = await fetch(`${api.baseUrl}/v2/customers/${encodeURIComponent(username)}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${api.token('app-1', ['customers:erase'])}` },
    });
    expect(erased.status).toBeLessThan(300);
    expect(await remembered()).toHaveLength(0);
  });

  it('a second user handing over the same transaction: moved (transfer), both customers change in the feed and the webhooks', async () => {
    const hook = await startReceiver();
    try {
      await addEndpoint(db.dataSource, api.config.webhooks, { appId: 'app-1', url: hook.url });
      const [first, second] = [`first-${nextId()}`, `second-${nextId()}`];
      const t = storeKit2Transaction();
      const recorded = await post({ signedTransaction: t.jws, applicationUsername: first }, backendToken('app-1'));
      expect(recorded.status).toBe(200);
      const cursor = (await api.get('/v2/customers?changedAfter=0&limit=1000', api.token('app-1'))).body.paging.next as string;
      const moved = await post({ signedTransaction: t.jws, applicationUsername: second }, backendToken('app-1'));
      expect(moved.status).toBe(200);
      expect(moved.body.customer).toMatchObject({ applicationUsername: second, receiptIds: [`apple:${t.id}`], customerInfo: { activeSubscriber: true } });
      expect(await customer('app-1', first)).toMatchObject({ receiptIds: [], customerInfo: {} });
      // Apple's next notification still carries the first user's token (no In-App Purchase key for app-1, so Apple was not told):
      // the app's transfer stands, the store's stale link yields to it.
      expect((await appleDidRenew(t, recorded.body.appAccountToken, Date.now() - 500)).status).toBe(200);
      await embeddedLogCaughtUp(db.dataSource);
      expect(await customer('app-1', second)).toMatchObject({ receiptIds: [`apple:${t.id}`] });
      expect(await customer('app-1', first)).toMatchObject({ receiptIds: [] });
      const changed = (await api.get(`/v2/customers?changedAfter=${encodeURIComponent(cursor)}&limit=1000`, api.token('app-1'))).body.rows as {
        applicationUsername: string;
        receiptIds: string[];
      }[];
      expect(changed.find((r) => r.applicationUsername === first)).toMatchObject({ receiptIds: [] });
      expect(changed.find((r) => r.applicationUsername === second)).toMatchObject({ receiptIds: [`apple:${t.id}`] });
      await expectEventually(() => {
        const last = (user: string) =>
          hook.received.filter((r) => r.message.type === 'customer.updated' && r.message.data.applicationUsername === user).at(-1)?.message.data;
        expect(last(first)).toMatchObject({ receiptIds: [] });
        expect(last(second)).toMatchObject({ receiptIds: [`apple:${t.id}`] });
      });
    } finally {
      await hook.close();
    }
  });

  it('keep: the first owner keeps the purchase; a second user gets 409 naming the rule, and nothing is published', async () => {
    const t = storeKit2Transaction();
    const owner = `owner-${nextId()}`;
    expect((await post({ signedTransaction: t.jws }, userToken('app-keep', owner))).status).toBe(200);
    const before = await logSize();
    const refused = await post({ signedTransaction: t.jws }, userToken('app-keep', `other-${nextId()}`));
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ code: 'receipt_owned_by_another_user' });
    expect(refused.body.detail).toContain('"keep" (PURCHASE_OWNERSHIP)');
    expect(await logSize()).toBe(before);
    expect(await customer('app-keep', owner)).toMatchObject({ receiptIds: [`apple:${t.id}`] });
    // A transaction whose appAccountToken names another user follows the same rule.
    const tokened = storeKit2Transaction({ appAccountToken: randomUUID() });
    const other = await post({ signedTransaction: tokened.jws }, userToken('app-keep', `third-${nextId()}`));
    expect(other).toMatchObject({ status: 409, body: { code: 'receipt_owned_by_another_user' } });
  });

  it("a token bound to one user: 403 for another user's name in the body, and for the read endpoints", async () => {
    const t = storeKit2Transaction();
    const bound = userToken('app-1', 'carol');
    const other = await post({ signedTransaction: t.jws, applicationUsername: 'mallory' }, bound);
    expect(other).toMatchObject({ status: 403, body: { code: 'username_not_allowed' } });
    expect((await api.get('/v2/customers?limit=1', bound)).status).toBe(403);
    const readOnly = await post({ signedTransaction: t.jws, applicationUsername: 'x' }, api.token('app-1'));
    expect(readOnly).toMatchObject({ status: 403, body: { code: 'insufficient_scope' } });
    const bare = await post({ transactionId: '12345' }, bound);
    expect(bare).toMatchObject({ status: 403, body: { code: 'username_not_allowed' } });
    expect(bare.body.detail).toContain('proves no purchase');
    // nor a receipt: ReceiptUtility reads one without checking its signature, so an app user could wrap any id in one
    const forgedReceipt = await post({ appReceipt: appStoreReceipt('xcode-app-receipt-with-transaction') }, bound);
    expect(forgedReceipt).toMatchObject({ status: 403, body: { code: 'username_not_allowed' } });
    const nobody = await post({ signedTransaction: t.jws }, backendToken('app-1'));
    expect(nobody).toMatchObject({ status: 400, body: { code: 'invalid_parameter', parameter: 'applicationUsername' } });
  });

  it('bad input gets a 4xx naming what is wrong and publishes nothing', async () => {
    const token = backendToken('app-1');
    const before = await logSize();
    const forged = storeKit2Transaction({ signer: otherCa });
    // a chain under a trusted root whose certificates expired long ago (checked at signedDate only within the week before now)
    const expired = storeKit2Transaction({ signer: expiredCa });
    const otherApp = storeKit2Transaction({ bundleId: 'com.example.other' });
    const cases: [unknown, number, string, string?][] = [
      [{ signedTransaction: forged.jws, applicationUsername: 'u' }, 422, 'purchase_unverified'],
      [{ signedTransaction: otherApp.jws, applicationUsername: 'u' }, 422, 'purchase_unverified'],
      [{ signedTransaction: expired.jws, applicationUsername: 'u' }, 422, 'purchase_unverified'],
      [{ signedTransaction: 'not-a-jws', applicationUsername: 'u' }, 400, 'invalid_parameter', 'signedTransaction'],
      [{ signedTransaction: forged.jws, purchaseToken: 'abc', applicationUsername: 'u' }, 400, 'invalid_parameter', 'purchaseToken'],
      [{ applicationUsername: 'u' }, 400, 'invalid_parameter', 'body'],
      [{ signedTransaction: forged.jws, platform: 'amazon', applicationUsername: 'u' }, 400, 'invalid_parameter', 'platform'],
      [{ signedTransaction: forged.jws, sneaky: 1, applicationUsername: 'u' }, 400, 'invalid_parameter', 'sneaky'],
      [{ signedTransaction: forged.jws, applicationUsername: 'bad\u0001name' }, 400, 'invalid_parameter', 'applicationUsername'],
      [[1, 2], 400, 'invalid_parameter', 'body'],
      [{ transactionId: '12345', applicationUsername: 'u' }, 422, 'store_access_not_configured'],
      [{ purchaseToken: 'token-1', applicationUsername: 'u' }, 422, 'store_access_not_configured'],
    ];
    for (const [body, status, code, parameter] of cases) {
      const res = await post(body, token);
      expect({ body, status: res.status, code: res.body.code, parameter: res.body.parameter }).toEqual({ body, status, code, parameter });
    }
    const noKey = await post({ transactionId: '12345', applicationUsername: 'u' }, token);
    expect(noKey.body.detail).toContain('APPLE_API_KEYS');
    const noGoogle = await post({ purchaseToken: 'token-1', applicationUsername: 'u' }, token);
    expect(noGoogle.body.detail).toContain('GOOGLE_APPS');
    expect((await post(null, token, { raw: '{"signedTransaction": ', contentType: 'application/json' })).status).toBe(400);
    expect((await post(null, token, { raw: 'signedTransaction=x', contentType: 'application/x-www-form-urlencoded' })).status).toBe(415);
    const huge = await post({ appReceipt: 'A'.repeat(600_000), applicationUsername: 'u' }, token);
    expect(huge.status).toBe(413);
    const deep = await post(null, token, { raw: '['.repeat(50) + ']'.repeat(50) });
    expect(deep.status).toBe(400);
    const poisoned = await post(null, token, { raw: `{"__proto__": {"applicationUsername": "admin"}, "signedTransaction": "${forged.jws}"}` });
    expect(poisoned.status).toBe(400);
    expect(await logSize()).toBe(before);
  });

  it('the App Store Server API path: a transaction id and a StoreKit 1 app receipt read the history; unknown ids are 422; Set App Account Token tells Apple', async () => {
    const token = backendToken('app-k');
    const id = nextId();
    const start = Date.now() - 40 * DAY;
    const chain = [0, 1].map((i) => ({
      transactionId: i === 0 ? id : nextId(),
      originalTransactionId: id,
      productId: 'pro_monthly',
      purchaseDate: start + i * 30 * DAY,
      originalPurchaseDate: start,
      expiresDate: start + (i + 1) * 30 * DAY,
      type: 'Auto-Renewable Subscription',
      quantity: 1,
      inAppOwnershipType: 'PURCHASED',
      transactionReason: i === 0 ? 'PURCHASE' : 'RENEWAL',
      price: 4990,
      currency: 'USD',
    }));
    apple.addCustomer(chain);
    const user = `dave-${nextId()}@example.com`;
    const res = await post({ transactionId: chain[1].transactionId, applicationUsername: user }, token);
    expect(res.status).toBe(200);
    expect(res.body.customer).toMatchObject({
      applicationUsername: user,
      receiptIds: [`apple:${id}`],
      customerInfo: { activeSubscriber: true, renewalIntent: 'Renew' },
    });
    expect(res.body.transactions.map((t: { transactionId: string }) => t.transactionId).sort()).toEqual(chain.map((t) => `apple:${t.transactionId}`).sort());
    expect(apple.accountTokens.get(id)).toBe(res.body.appAccountToken);

    // A transaction id is no proof of purchase: it links a purchase no one owns, never moves one (docs/security.md).
    const stolen = await post({ transactionId: id, applicationUsername: `mallory-${nextId()}` }, token);
    expect(stolen).toMatchObject({ status: 409, body: { code: 'receipt_owned_by_another_user' } });
    expect(stolen.body.detail).toContain('proves no purchase');
    expect(await customer('app-k', user)).toMatchObject({ receiptIds: [`apple:${id}`] });

    const unknown = await post({ transactionId: '999999999999', applicationUsername: user }, token);
    expect(unknown).toMatchObject({ status: 422, body: { code: 'purchase_unknown' } });

    // Apple's own test receipt (tests/resources/xcode of app-store-server-library-node) names transaction "0".
    apple.addCustomer([
      {
        ...chain[0],
        transactionId: '0',
        originalTransactionId: '0',
        purchaseDate: Date.now() - DAY,
        originalPurchaseDate: Date.now() - DAY,
        expiresDate: Date.now() + 29 * DAY,
      },
    ]);
    const receipt = appStoreReceipt('xcode-app-receipt-with-transaction');
    const fromReceipt = await post({ appReceipt: receipt, applicationUsername: `erin-${nextId()}` }, token);
    expect(fromReceipt.status).toBe(200);
    expect(fromReceipt.body.customer.receiptIds).toEqual(['apple:0']);
    const empty = appStoreReceipt('xcode-app-receipt-empty');
    expect(await post({ appReceipt: empty, applicationUsername: 'u' }, token)).toMatchObject({ status: 422, body: { code: 'purchase_unknown' } });
    expect(await post({ appReceipt: Buffer.from('not a receipt').toString('base64'), applicationUsername: 'u' }, token)).toMatchObject({
      status: 422,
      body: { code: 'purchase_unverified' },
    });
  });

  it('the Play Developer API path: a subscription token read with subscriptionsv2.get; 404 and 410 tokens are 422', async () => {
    const token = backendToken('app-g');
    const purchaseToken = `tok-${nextId()}`;
    const now = Date.now();
    const order = `GPA.3345-${nextId()}`;
    google.setSubscription(PACKAGE, purchaseToken, {
      kind: 'androidpublisher#subscriptionPurchaseV2',
      startTime: new Date(now - DAY).toISOString(),
      regionCode: 'US',
      subscriptionState: 'SUBSCRIPTION_STATE_ACTIVE',
      latestOrderId: order,
      acknowledgementState: 'ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED',
      lineItems: [
        {
          productId: 'pro_monthly',
          expiryTime: new Date(now + 29 * DAY).toISOString(),
          autoRenewingPlan: { autoRenewEnabled: true, recurringPrice: { currencyCode: 'USD', units: '4', nanos: 990000000 } },
          offerDetails: { basePlanId: 'monthly', offerTags: [] },
          latestSuccessfulOrderId: order,
        },
      ],
    });
    const user = `frank-${nextId()}`;
    const res = await post({ purchaseToken, applicationUsername: user }, token);
    expect(res.status).toBe(200);
    expect(res.body.customer).toMatchObject({ applicationUsername: user, customerInfo: { activeSubscriber: true } });
    expect(res.body.transactions[0]).toMatchObject({ platform: 'google', productId: 'google:pro_monthly' });

    for (const status of [404, 410] as const) {
      const gone = `gone-${status}-${nextId()}`;
      google.forget(PACKAGE, gone, status);
      const refused = await post({ purchaseToken: gone, applicationUsername: user }, token);
      expect(refused).toMatchObject({ status: 422, body: { code: 'purchase_unknown' } });
      expect(refused.body.detail).toContain(`HTTP ${status}`);
    }
  });

  it('the cordova-plugin-purchase validator protocol: bodies as the plugin builds them, answers in its shape (errors too, with HTTP 200)', async () => {
    const cordova = (name: string, replace: Record<string, string>) => {
      let text = readFileSync(path.join(fixtures, 'cordova-validator', name), 'utf8');
      for (const [from, to] of Object.entries(replace)) text = text.replaceAll(from, to);
      return JSON.parse(text);
    };
    const validator = { path: '/v2/purchases/validator' };
    // StoreKit 2 (transaction type apple-sk2): recorded for additionalData.applicationUsername
    const t = storeKit2Transaction();
    const sk2User = `cordova-${nextId()}@example.com`;
    const sk2 = await post(cordova('apple-storekit2.json', { SIGNED_TRANSACTION: t.jws, 'user@example.com': sk2User }), backendToken('app-1'), validator);
    expect(sk2.status).toBe(200);
    expect(sk2.body).toEqual({
      ok: true,
      data: {
        id: 'com.example.app',
        latest_receipt: true,
        transaction: { type: 'apple-sk2' },
        date: expect.any(String),
        collection: [
          expect.objectContaining({
            id: 'pass.premium',
            platform: 'ios-appstore',
            transactionId: t.id,
            purchaseId: t.id,
            purchaseDate: t.payload.purchaseDate,
            expiryDate: t.payload.expiresDate,
            isExpired: false,
            quantity: 1,
          }),
        ],
      },
    });
    expect(await customer('app-1', sk2User)).toMatchObject({ receiptIds: [`apple:${t.id}`] });

    // Google Play (android-playstore, a subscription): the token read with subscriptionsv2.get
    const purchaseToken = `cordova-tok-${nextId()}`;
    const order = `GPA.7777-${nextId()}`;
    google.setSubscription(PACKAGE, purchaseToken, {
      kind: 'androidpublisher#subscriptionPurchaseV2',
      startTime: new Date(Date.now() - DAY).toISOString(),
      regionCode: 'US',
      subscriptionState: 'SUBSCRIPTION_STATE_ACTIVE',
      latestOrderId: order,
      acknowledgementState: 'ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED',
      lineItems: [
        {
          productId: 'premium_monthly',
          expiryTime: new Date(Date.now() + 29 * DAY).toISOString(),
          autoRenewingPlan: { autoRenewEnabled: true, recurringPrice: { currencyCode: 'USD', units: '4', nanos: 990000000 } },
          offerDetails: { basePlanId: 'monthly', offerTags: [] },
          latestSuccessfulOrderId: order,
        },
      ],
    });
    const googleUser = `cordova-g-${nextId()}`;
    const play = await post(cordova('google.json', { PURCHASE_TOKEN: purchaseToken, 'user@example.com': googleUser }), backendToken('app-g'), validator);
    expect(play.body).toMatchObject({
      ok: true,
      data: {
        id: 'premium_monthly',
        transaction: { type: 'android-playstore' },
        collection: [{ id: 'premium_monthly', platform: 'android-playstore', isExpired: false }],
      },
    });

    // StoreKit 1 (ios-appstore): Apple's test receipt names transaction 0, which another user owns by now: the plugin's error payload, with 200
    const sk1 = await post(
      cordova('apple-storekit1.json', { APP_RECEIPT: appStoreReceipt('xcode-app-receipt-with-transaction') }),
      backendToken('app-k'),
      validator,
    );
    expect(sk1.status).toBe(200);
    expect(sk1.body).toEqual({ ok: false, status: 409, code: 6777007, message: expect.stringContaining('proves no purchase'), data: { latest_receipt: true } });
    const unknownType = await post({ transaction: { type: 'braintree', id: 'x' } }, backendToken('app-1'), validator);
    expect(unknownType).toMatchObject({ status: 200, body: { ok: false, status: 400, code: 6777016 } });
  });

  it('202 with where to look when the read models do not show the purchase within PURCHASE_WAIT', async () => {
    const idle = await startTestApp({
      databaseUrl: db.url,
      env: { ...pick(api.config), CONSUMER_ENABLED: 'false', PURCHASE_WAIT: '0ms' },
    });
    try {
      const t = storeKit2Transaction();
      const user = `gina-${nextId()}`;
      const res = await fetch(`${idle.baseUrl}/v2/purchases`, {
        method: 'POST',
        headers: { authorization: `Bearer ${userToken('app-1', user)}`, 'content-type': 'application/json' },
        body: JSON.stringify({ signedTransaction: t.jws }),
      });
      expect(res.status).toBe(202);
      expect(res.headers.get('location')).toBe(`/v2/customers?applicationUsername=${user}`);
      expect(await res.json()).toMatchObject({ status: 'pending', applicationUsername: user });
      // The running consumer projects it: the customer shows up where the answer said.
      await embeddedLogCaughtUp(db.dataSource);
      expect(await customer('app-1', user)).toMatchObject({ receiptIds: [`apple:${t.id}`] });
    } finally {
      await idle.close();
    }
  });

  // Last: it reads everything the tests before it published.
  it('the events are ordinary events: the reference model and a projection from scratch of the log agree with the read models', async () => {
    const rows = (await db.dataSource.query(`SELECT value FROM public.event_log ORDER BY "offset"`)) as { value: Buffer }[];
    const [{ key }] = await db.dataSource.query(`SELECT key FROM public.erasure_key`);
    // docs/privacy.md: the keyed hash of app, NUL, name; a name redacted in the embedded log (erased:<hash>) stands for its own hash
    const hash = (app: string, name: string) =>
      /^erased:[0-9a-f]{64}$/.test(name) ? name.slice('erased:'.length) : createHmac('sha256', key).update(`${app}\u0000${name}`, 'utf8').digest('hex');
    const model = new ReferenceModel(
      rows.map((r) => JSON.parse(r.value.toString('utf8')) as RawEvent),
      hash,
    );
    const now = new Date();
    for (const app of ['app-1', 'app-keep', 'app-k', 'app-g']) {
      expect((await api.get('/v2/customers?limit=1000', api.token(app))).body).toEqual(model.customersPage(app, { skip: 0, limit: 1000 }, now));
      // ownershipType (Family Sharing) is shown as the store says it; the model renders the fields the rules read and the generator produces
      const shown = (await api.get('/v2/transactions?limit=1000', api.token(app))).body as { rows: Record<string, unknown>[] };
      for (const row of shown.rows) delete row.ownershipType;
      expect(shown).toEqual(model.transactionsPage(app, { skip: 0, limit: 1000 }));
    }
    await expectEqualsFromScratch(
      db.dataSource,
      rows.map((r) => r.value),
    );
  });
});

/** Apple's DID_RENEW for the subscription of `t`, its renewal and renewal info carrying `token` as appAccountToken (ResponseBodyV2DecodedPayload). */
async function appleDidRenew(t: ReturnType<typeof storeKit2Transaction>, token: string, renewedAt: number) {
  const renewal = {
    ...t.payload,
    transactionId: nextId(),
    purchaseDate: renewedAt,
    expiresDate: renewedAt + 30 * DAY,
    transactionReason: 'RENEWAL',
    appAccountToken: token,
  };
  const notification = {
    signedPayload: signAppleJws(ca, {
      notificationType: 'DID_RENEW',
      notificationUUID: randomUUID(),
      version: '2.0',
      signedDate: renewedAt + 5,
      data: {
        bundleId: BUNDLE,
        bundleVersion: '1.0',
        environment: 'Sandbox',
        status: 1,
        signedTransactionInfo: signAppleJws(ca, { ...renewal, signedDate: renewedAt + 5 }),
        signedRenewalInfo: signAppleJws(ca, {
          originalTransactionId: t.id,
          autoRenewProductId: 'pass.premium',
          productId: 'pass.premium',
          autoRenewStatus: 1,
          appAccountToken: token,
          signedDate: renewedAt + 5,
          environment: 'Sandbox',
        }),
      },
    }),
  };
  return fetch(`${api.baseUrl}/v2/notifications/apple/app-1`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(notification),
  });
}

/** One of Apple's test receipts, encoded as the App Store encodes receipts (definite lengths). */
function appStoreReceipt(name: string): string {
  return withDefiniteLengths(Buffer.from(readFileSync(path.join(fixtures, 'apple-receipts', name), 'utf8').trim(), 'base64')).toString('base64');
}

/** The Apple settings the main app runs with, as environment variables for a second instance. */
function pick(config: TestApp['config']): Record<string, string> {
  return {
    APPLE_ROOT_CERTIFICATES: writeTempFile('apple-root.pem', new X509Certificate(ca.root).toString()),
    APPLE_APPS: [...config.apple!.apps.entries()].map(([id, app]) => `${id}:${app.bundleId}:${app.environment}`).join(','),
  };
}
