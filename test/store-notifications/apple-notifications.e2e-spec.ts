import { jest } from '@jest/globals';
import { randomUUID, X509Certificate } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Clock } from '../../src/common/clock.js';
import { createAppleTestCa, signAppleJws, type AppleTestCa } from '../../src/store-notifications/apple/apple-test-ca.js';
import { startTestApp, type TestApp } from '../utils/app.js';
import { embeddedLogCaughtUp } from '../utils/events.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { runCli, writeTempFile } from '../utils/processes.js';

jest.setTimeout(120_000);

// Access is judged at NOW; every notification is signed before it (a real store's past).
const NOW = new Date('2026-06-15T12:00:00Z');
const clock: Clock = { now: () => NOW };
const BUNDLE = 'com.example.app';
const ms = (iso: string) => Date.parse(iso);

type Tx = Record<string, unknown>;
let ca: AppleTestCa;

/** A transaction of `user`'s subscription `sub` as Apple signs it (JWSTransactionDecodedPayload). */
function tx(user: string, sub: string, o: { id: string; purchased: string; expires?: string; original?: string } & Tx): Tx {
  const { id, purchased, expires, original, ...rest } = o;
  return {
    transactionId: id,
    originalTransactionId: sub,
    bundleId: BUNDLE,
    productId: expires ? 'pro_monthly' : 'coins_100',
    purchaseDate: ms(purchased),
    originalPurchaseDate: ms(original ?? purchased),
    ...(expires ? { expiresDate: ms(expires), type: 'Auto-Renewable Subscription' } : { type: 'Consumable' }),
    quantity: 1,
    appAccountToken: user,
    inAppOwnershipType: 'PURCHASED',
    signedDate: ms(purchased),
    environment: 'Sandbox',
    transactionReason: 'PURCHASE',
    storefront: 'USA',
    storefrontId: '143441',
    price: 4990,
    currency: 'USD',
    ...rest,
  };
}

const renewalInfo = (sub: string, o: Tx = {}) => ({
  originalTransactionId: sub,
  productId: 'pro_monthly',
  autoRenewProductId: 'pro_monthly',
  autoRenewStatus: 1,
  signedDate: ms('2026-01-01T00:00:00Z'),
  environment: 'Sandbox',
  ...o,
});

function notification(
  type: string,
  subtype: string | undefined,
  signedDate: string,
  t?: Tx,
  r?: Tx,
  o: { signer?: AppleTestCa; bundleId?: string; environment?: string } = {},
) {
  const signer = o.signer ?? ca;
  const data: Tx = { bundleId: o.bundleId ?? BUNDLE, bundleVersion: '1.0', environment: o.environment ?? 'Sandbox', status: 1 };
  if (t)
    data.signedTransactionInfo = signAppleJws(signer, {
      ...t,
      bundleId: o.bundleId ?? BUNDLE,
      environment: o.environment ?? 'Sandbox',
      signedDate: ms(signedDate),
    });
  if (r) data.signedRenewalInfo = signAppleJws(signer, { ...r, environment: o.environment ?? 'Sandbox', signedDate: ms(signedDate) });
  return {
    signedPayload: signAppleJws(signer, {
      notificationType: type,
      ...(subtype ? { subtype } : {}),
      notificationUUID: randomUUID(),
      version: '2.0',
      signedDate: ms(signedDate),
      data,
    }),
  };
}

describe("App Store Server Notifications V2 in (e2e: real PostgreSQL, embedded log, Apple's verifier)", () => {
  let db: TestDatabase;
  let api: TestApp;
  let token: string;

  beforeAll(async () => {
    ca = await createAppleTestCa();
    db = await createTestDatabase('apple');
    api = await startTestApp({
      databaseUrl: db.url,
      clock,
      env: {
        CONSUMER_ENABLED: 'true',
        APPLE_ROOT_CERTIFICATES: writeTempFile('apple-root.pem', new X509Certificate(ca.root).toString()),
        APPLE_APPS: `app-1:${BUNDLE}:Sandbox`,
      },
    });
    token = api.token('app-1');
  });
  afterAll(async () => {
    await api?.close();
    await db?.drop();
  });

  const post = (body: unknown, app = 'app-1') =>
    fetch(`${api.baseUrl}/v2/notifications/apple/${app}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(
      async (r) => ({
        status: r.status,
        headers: r.headers,
        body: (await r.json()) as any,
      }),
    );
  const logSize = async () => Number((await db.dataSource.query(`SELECT count(*)::int AS n FROM public.event_log`))[0].n);
  const caughtUp = () => embeddedLogCaughtUp(db.dataSource);
  const customer = async (user: string) => (await api.get(`/v2/customers?applicationUsername=${user}`, token)).body.rows[0];
  const transaction = async (id: string) => ((await api.get('/v2/transactions?limit=1000', token)).body.rows as Tx[]).find((t) => t.transactionId === id);
  const send = async (...bodies: ReturnType<typeof notification>[]) => {
    for (const body of bodies) {
      const res = await post(body);
      expect(res).toMatchObject({ status: 200, body: { status: 'published' } });
    }
    await caughtUp();
  };

  it('SUBSCRIBED initial buy, then DID_RENEW: active until the renewal expires; the renewal is its own transaction at its charge date', async () => {
    const u = randomUUID();
    await send(
      notification(
        'SUBSCRIBED',
        'INITIAL_BUY',
        '2026-05-01T00:00:00Z',
        tx(u, 's1', { id: 's1', purchased: '2026-05-01T00:00:00Z', expires: '2026-06-01T00:00:00Z', offerType: 1, offerDiscountType: 'FREE_TRIAL' }),
        renewalInfo('s1'),
      ),
      notification(
        'DID_RENEW',
        undefined,
        '2026-06-01T00:00:05Z',
        tx(u, 's1', {
          id: 's1-2',
          purchased: '2026-06-01T00:00:00Z',
          original: '2026-05-01T00:00:00Z',
          expires: '2026-07-01T00:00:00Z',
          transactionReason: 'RENEWAL',
        }),
        renewalInfo('s1'),
      ),
    );
    expect(await customer(u)).toEqual({
      applicationUsername: u,
      customerInfo: {
        expirationDate: '2026-07-01T00:00:00.000Z',
        lastPurchaseDate: '2026-06-01T00:00:00.000Z',
        lastRenewalDate: '2026-06-01T00:00:00.000Z',
        renewalIntent: 'Renew',
        activeSubscriber: true,
      },
      receiptIds: ['apple:s1'],
    });
    expect(await transaction('apple:s1')).toMatchObject({
      purchaseId: 'apple:s1',
      productId: 'apple:pro_monthly',
      receiptId: 'apple:s1',
      sandbox: true,
      isTrialPeriod: true,
      isIntroPeriod: false,
      amountMicros: 4990000,
      currency: 'USD',
    });
    expect(await transaction('apple:s1-2')).toMatchObject({
      purchaseDate: '2026-05-01T00:00:00.000Z',
      lastRenewalDate: '2026-06-01T00:00:00.000Z',
      expirationDate: '2026-07-01T00:00:00.000Z',
    });
    const june = await api.get('/v2/transactions?startdate=2026-06-01T00:00:00Z&enddate=2026-06-02T00:00:00Z', token);
    expect(june.body.rows.map((t: Tx) => t.transactionId)).toContain('apple:s1-2');
  });

  it('DID_CHANGE_RENEWAL_STATUS (auto-renew off): still active, renewal intent Lapse', async () => {
    const u = randomUUID();
    const t = tx(u, 's2', { id: 's2', purchased: '2026-06-01T00:00:00Z', expires: '2026-07-01T00:00:00Z' });
    await send(notification('SUBSCRIBED', 'INITIAL_BUY', '2026-06-01T00:00:00Z', t, renewalInfo('s2')));
    await send(notification('DID_CHANGE_RENEWAL_STATUS', 'AUTO_RENEW_DISABLED', '2026-06-10T00:00:00Z', t, renewalInfo('s2', { autoRenewStatus: 0 })));
    expect((await customer(u)).customerInfo).toMatchObject({ renewalIntent: 'Lapse', activeSubscriber: true, expirationDate: '2026-07-01T00:00:00.000Z' });
    expect(await transaction('apple:s2')).toMatchObject({ renewalIntent: 'Lapse', renewalIntentChangeDate: '2026-06-10T00:00:00.000Z' });
  });

  it('DID_FAIL_TO_RENEW with a grace period keeps access until the grace ends; without one, access ends at expiry; GRACE_PERIOD_EXPIRED ends it', async () => {
    const [g, n] = [randomUUID(), randomUUID()];
    const tg = tx(g, 's3', { id: 's3', purchased: '2026-05-12T00:00:00Z', expires: '2026-06-12T00:00:00Z' });
    const tn = tx(n, 's4', { id: 's4', purchased: '2026-05-12T00:00:00Z', expires: '2026-06-12T00:00:00Z' });
    await send(
      notification(
        'DID_FAIL_TO_RENEW',
        'GRACE_PERIOD',
        '2026-06-12T00:00:10Z',
        tg,
        renewalInfo('s3', { isInBillingRetryPeriod: true, gracePeriodExpiresDate: ms('2026-06-28T00:00:00Z') }),
      ),
      notification('DID_FAIL_TO_RENEW', undefined, '2026-06-12T00:00:10Z', tn, renewalInfo('s4', { isInBillingRetryPeriod: true })),
    );
    expect((await customer(g)).customerInfo).toMatchObject({ expirationDate: '2026-06-28T00:00:00.000Z', activeSubscriber: true });
    expect(await transaction('apple:s3')).toMatchObject({ isBillingRetryPeriod: true, gracePeriodExpirationDate: '2026-06-28T00:00:00.000Z' });
    expect((await customer(n)).customerInfo).toMatchObject({ expirationDate: '2026-06-12T00:00:00.000Z', activeSubscriber: false });
    await send(
      notification(
        'GRACE_PERIOD_EXPIRED',
        undefined,
        '2026-06-14T00:00:00Z',
        tg,
        renewalInfo('s3', { isInBillingRetryPeriod: true, gracePeriodExpiresDate: ms('2026-06-28T00:00:00Z') }),
      ),
    );
    expect((await customer(g)).customerInfo).toMatchObject({ activeSubscriber: false });
  });

  it('EXPIRED ends access; SUBSCRIBED resubscribe gives it back as a new transaction of the same subscription', async () => {
    const u = randomUUID();
    const t = tx(u, 's5', { id: 's5', purchased: '2026-04-01T00:00:00Z', expires: '2026-05-01T00:00:00Z' });
    await send(notification('EXPIRED', 'VOLUNTARY', '2026-05-01T00:00:05Z', t, renewalInfo('s5', { autoRenewStatus: 0, expirationIntent: 1 })));
    expect((await customer(u)).customerInfo).toMatchObject({ activeSubscriber: false, renewalIntent: 'Lapse' });
    await send(
      notification(
        'SUBSCRIBED',
        'RESUBSCRIBE',
        '2026-06-02T00:00:00Z',
        tx(u, 's5', { id: 's5-2', purchased: '2026-06-02T00:00:00Z', original: '2026-04-01T00:00:00Z', expires: '2026-07-02T00:00:00Z' }),
        renewalInfo('s5'),
      ),
    );
    expect((await customer(u)).customerInfo).toMatchObject({
      activeSubscriber: true,
      expirationDate: '2026-07-02T00:00:00.000Z',
      lastRenewalDate: '2026-06-02T00:00:00.000Z',
    });
  });

  it('REFUND and REVOKE end access at the revocation, even with an expiry ahead', async () => {
    const [a, b] = [randomUUID(), randomUUID()];
    await send(
      notification(
        'REFUND',
        undefined,
        '2026-06-05T00:00:00Z',
        tx(a, 's6', {
          id: 's6',
          purchased: '2026-06-01T00:00:00Z',
          expires: '2027-06-01T00:00:00Z',
          revocationDate: ms('2026-06-05T00:00:00Z'),
          revocationReason: 1,
        }),
        renewalInfo('s6', { autoRenewStatus: 0 }),
      ),
      notification(
        'REVOKE',
        undefined,
        '2026-06-06T00:00:00Z',
        tx(b, 's7', {
          id: 's7',
          purchased: '2026-06-01T00:00:00Z',
          expires: '2027-06-01T00:00:00Z',
          revocationDate: ms('2026-06-06T00:00:00Z'),
          revocationReason: 0,
          inAppOwnershipType: 'FAMILY_SHARED',
        }),
      ),
    );
    expect((await customer(a)).customerInfo).toMatchObject({ expirationDate: '2026-06-05T00:00:00.000Z', activeSubscriber: false });
    expect(await transaction('apple:s6')).toMatchObject({ revocationDate: '2026-06-05T00:00:00.000Z', cancelationReason: 'Developer', isExpired: true });
    expect((await customer(b)).customerInfo).toMatchObject({ expirationDate: '2026-06-06T00:00:00.000Z', activeSubscriber: false });
  });

  it('DID_CHANGE_RENEWAL_PREF upgrade: the replaced yearly stops driving the summary; the new monthly does', async () => {
    const u = randomUUID();
    await send(
      notification(
        'SUBSCRIBED',
        'INITIAL_BUY',
        '2026-01-10T00:00:00Z',
        tx(u, 's8', { id: 's8', productId: 'pro_yearly', purchased: '2026-01-10T00:00:00Z', expires: '2027-01-10T00:00:00Z' }),
        renewalInfo('s8'),
      ),
    );
    await send(
      notification(
        'DID_CHANGE_RENEWAL_PREF',
        'UPGRADE',
        '2026-06-01T00:00:00Z',
        tx(u, 's8', {
          id: 's8',
          productId: 'pro_yearly',
          purchased: '2026-01-10T00:00:00Z',
          expires: '2027-01-10T00:00:00Z',
          isUpgraded: true,
          revocationDate: ms('2026-06-01T00:00:00Z'),
          revocationReason: 0,
        }),
      ),
      notification(
        'SUBSCRIBED',
        'INITIAL_BUY',
        '2026-06-01T00:00:01Z',
        tx(u, 's9', { id: 's9', productId: 'pro_max_monthly', purchased: '2026-06-01T00:00:00Z', expires: '2026-07-01T00:00:00Z' }),
        renewalInfo('s9'),
      ),
    );
    expect(await transaction('apple:s8')).toMatchObject({ isUpgraded: true, cancelationReason: 'System.Replaced' });
    expect((await customer(u)).customerInfo).toMatchObject({ expirationDate: '2026-07-01T00:00:00.000Z', activeSubscriber: true });
  });

  // Issue 21. Apple's docs: DID_CHANGE_RENEWAL_PREF (UPGRADE) "the customer upgraded their subscription or
  // cross-graded to a subscription with the same duration ... goes into effect immediately, starting a new
  // billing period" and its signedTransactionInfo is the new transaction, in the same subscription (same
  // originalTransactionId), transactionReason PURCHASE; isUpgraded only ever appears on the old transaction,
  // which is not sent again. DOWNGRADE "take[s] effect at the next renewal date": the renewal (DID_RENEW,
  // transactionReason RENEWAL) carries the new product. Field names: JWSTransactionDecodedPayload and
  // JWSRenewalInfoDecodedPayload of app-store-server-library-node (tests/resources/models/signedTransaction.json).
  it('DID_CHANGE_RENEWAL_PREF UPGRADE (yearly -> monthly) ends the yearly at the upgrade, whichever notification arrives first', async () => {
    const [first, late, renewed] = [randomUUID(), randomUUID(), randomUUID()];
    const yearly = (u: string, sub: string, o: Partial<{ id: string; purchased: string; original: string }> = {}) =>
      tx(u, sub, {
        id: o.id ?? sub,
        productId: 'pro_yearly',
        purchased: o.purchased ?? '2026-01-10T00:00:00Z',
        original: o.original,
        expires: '2027-01-10T00:00:00Z',
        price: 49990,
      });
    const monthly = (u: string, sub: string, original = '2026-01-10T00:00:00Z') =>
      tx(u, sub, {
        id: `${sub}-up`,
        productId: 'pro_max_monthly',
        purchased: '2026-06-01T00:00:00Z',
        original,
        expires: '2026-07-01T00:00:00Z',
        transactionReason: 'PURCHASE',
        price: 9990,
      });
    const upgradeRenewal = (sub: string) => renewalInfo(sub, { productId: 'pro_max_monthly', autoRenewProductId: 'pro_max_monthly' });
    const bought = (u: string, sub: string) =>
      notification(
        'SUBSCRIBED',
        'INITIAL_BUY',
        '2026-01-10T00:00:00Z',
        yearly(u, sub),
        renewalInfo(sub, { productId: 'pro_yearly', autoRenewProductId: 'pro_yearly' }),
      );
    const upgraded = (u: string, sub: string, original?: string) =>
      notification('DID_CHANGE_RENEWAL_PREF', 'UPGRADE', '2026-06-01T00:00:02Z', monthly(u, sub, original), upgradeRenewal(sub));

    // in the order it happened; then the upgrade first and the purchase delivered late
    await send(bought(first, 's20'));
    expect((await customer(first)).customerInfo).toMatchObject({ expirationDate: '2027-01-10T00:00:00.000Z', activeSubscriber: true });
    await send(upgraded(first, 's20'));
    await send(upgraded(late, 's21'));
    await send(bought(late, 's21'));
    // the yearly replaced is a renewal here (the second year): the notification cannot name it, the projection finds it
    await send(
      notification(
        'DID_RENEW',
        undefined,
        '2026-01-10T00:00:05Z',
        yearly(renewed, 's22', { id: 's22-2', purchased: '2026-01-10T00:00:00Z', original: '2025-01-10T00:00:00Z' }),
        renewalInfo('s22', { productId: 'pro_yearly' }),
      ),
      upgraded(renewed, 's22', '2025-01-10T00:00:00Z'),
    );

    for (const [u, sub, old] of [
      [first, 's20', 's20'],
      [late, 's21', 's21'],
      [renewed, 's22', 's22-2'],
    ]) {
      expect((await customer(u)).customerInfo).toEqual({
        expirationDate: '2026-07-01T00:00:00.000Z',
        lastPurchaseDate: '2026-06-01T00:00:00.000Z',
        lastRenewalDate: '2026-06-01T00:00:00.000Z',
        renewalIntent: 'Renew',
        activeSubscriber: true,
      });
      // Apple keeps the yearly's expiresDate; the row says it was replaced
      expect(await transaction(`apple:${old}`)).toMatchObject({
        productId: 'apple:pro_yearly',
        expirationDate: '2027-01-10T00:00:00.000Z',
        isUpgraded: true,
        cancelationReason: 'System.Replaced',
      });
      const current = await transaction(`apple:${sub}-up`);
      expect(current).toMatchObject({
        productId: 'apple:pro_max_monthly',
        purchaseId: `apple:${sub}`,
        lastRenewalDate: '2026-06-01T00:00:00.000Z',
        expirationDate: '2026-07-01T00:00:00.000Z',
      });
      expect(current!.isUpgraded).toBeUndefined();
      expect(current!.cancelationReason).toBeUndefined();
    }
  });

  it('DID_CHANGE_RENEWAL_PREF DOWNGRADE changes nothing until the renewal; the renewal of the lower product replaces nothing', async () => {
    const u = randomUUID();
    const yearly = tx(u, 's23', { id: 's23', productId: 'pro_yearly', purchased: '2025-06-01T00:00:00Z', expires: '2026-06-01T00:00:00Z' });
    await send(
      notification(
        'SUBSCRIBED',
        'INITIAL_BUY',
        '2025-06-01T00:00:00Z',
        yearly,
        renewalInfo('s23', { productId: 'pro_yearly', autoRenewProductId: 'pro_yearly' }),
      ),
    );
    // the DOWNGRADE notification carries the current (yearly) transaction; the renewal info names the lower product
    await send(
      notification(
        'DID_CHANGE_RENEWAL_PREF',
        'DOWNGRADE',
        '2026-03-01T00:00:00Z',
        yearly,
        renewalInfo('s23', { productId: 'pro_yearly', autoRenewProductId: 'basic_monthly' }),
      ),
    );
    expect((await customer(u)).customerInfo).toMatchObject({ expirationDate: '2026-06-01T00:00:00.000Z', renewalIntent: 'Renew' });
    await send(
      notification(
        'DID_RENEW',
        undefined,
        '2026-06-01T00:00:04Z',
        tx(u, 's23', {
          id: 's23-2',
          productId: 'basic_monthly',
          purchased: '2026-06-01T00:00:00Z',
          original: '2025-06-01T00:00:00Z',
          expires: '2026-07-01T00:00:00Z',
          transactionReason: 'RENEWAL',
        }),
        renewalInfo('s23', { productId: 'basic_monthly', autoRenewProductId: 'basic_monthly' }),
      ),
    );
    expect((await customer(u)).customerInfo).toMatchObject({
      expirationDate: '2026-07-01T00:00:00.000Z',
      lastRenewalDate: '2026-06-01T00:00:00.000Z',
      activeSubscriber: true,
    });
    const old = await transaction('apple:s23');
    expect(old).toMatchObject({ productId: 'apple:pro_yearly', expirationDate: '2026-06-01T00:00:00.000Z' });
    expect(old!.isUpgraded).toBeUndefined();
    expect(old!.cancelationReason).toBeUndefined();
  });

  it('a crossgrade to the same duration (subtype UPGRADE) replaces the old product at once', async () => {
    const u = randomUUID();
    await send(
      notification(
        'SUBSCRIBED',
        'INITIAL_BUY',
        '2026-06-05T00:00:00Z',
        tx(u, 's24', { id: 's24', productId: 'basic_monthly', purchased: '2026-06-05T00:00:00Z', expires: '2026-07-05T00:00:00Z' }),
        renewalInfo('s24'),
      ),
      notification(
        'DID_CHANGE_RENEWAL_PREF',
        'UPGRADE',
        '2026-06-10T00:00:01Z',
        tx(u, 's24', {
          id: 's24-2',
          productId: 'plus_monthly',
          purchased: '2026-06-10T00:00:00Z',
          original: '2026-06-05T00:00:00Z',
          expires: '2026-07-10T00:00:00Z',
        }),
        renewalInfo('s24', { productId: 'plus_monthly', autoRenewProductId: 'plus_monthly' }),
      ),
    );
    expect((await customer(u)).customerInfo).toMatchObject({
      expirationDate: '2026-07-10T00:00:00.000Z',
      lastRenewalDate: '2026-06-10T00:00:00.000Z',
      activeSubscriber: true,
    });
    expect(await transaction('apple:s24')).toMatchObject({ isUpgraded: true, cancelationReason: 'System.Replaced' });
  });

  it('OFFER_REDEEMED, PRICE_INCREASE and ONE_TIME_CHARGE carry their fields; a consumable never makes a subscriber', async () => {
    const [o, p, c] = [randomUUID(), randomUUID(), randomUUID()];
    await send(
      notification(
        'OFFER_REDEEMED',
        'INITIAL_BUY',
        '2026-06-01T00:00:00Z',
        tx(o, 's10', {
          id: 's10',
          purchased: '2026-06-01T00:00:00Z',
          expires: '2026-07-01T00:00:00Z',
          offerType: 3,
          offerIdentifier: 'SUMMER26',
          offerDiscountType: 'PAY_AS_YOU_GO',
          price: 1990,
        }),
        renewalInfo('s10'),
      ),
      notification(
        'PRICE_INCREASE',
        'ACCEPTED',
        '2026-06-03T00:00:00Z',
        tx(p, 's11', { id: 's11', purchased: '2026-06-01T00:00:00Z', expires: '2026-07-01T00:00:00Z' }),
        renewalInfo('s11', { priceIncreaseStatus: 1 }),
      ),
      notification('ONE_TIME_CHARGE', undefined, '2026-06-04T00:00:00Z', tx(c, 'c1', { id: 'c1', purchased: '2026-06-04T00:00:00Z', price: 990 })),
    );
    expect(await transaction('apple:s10')).toMatchObject({ discountId: 'SUMMER26', isIntroPeriod: false, isTrialPeriod: false, amountMicros: 1990000 });
    expect(await transaction('apple:s11')).toMatchObject({ priceConsentStatus: 'Accepted' });
    expect(await transaction('apple:c1')).toMatchObject({ productId: 'apple:coins_100', amountMicros: 990000 });
    expect((await transaction('apple:c1'))!.expirationDate).toBeUndefined();
    expect((await customer(c)).customerInfo).toMatchObject({ activeSubscriber: false, lastPurchaseDate: '2026-06-04T00:00:00.000Z' });
  });

  it('a win-back offer (offerType 4) and a family-shared subscription: shown per row, the family member is an active subscriber, a rebuild keeps both', async () => {
    // Field values as Apple documents them (App Store Server API: offerType 4 "a win-back offer",
    // offerPeriod an ISO 8601 duration, inAppOwnershipType FAMILY_SHARED "the transaction belongs to a
    // family member who benefits from service"): the family member gets a transaction of their own.
    const [buyer, member] = [randomUUID(), randomUUID()];
    await send(
      notification(
        'SUBSCRIBED',
        'RESUBSCRIBE',
        '2026-06-05T00:00:00Z',
        tx(buyer, 'wb1', {
          id: 'wb1',
          purchased: '2026-06-05T00:00:00Z',
          expires: '2026-09-05T00:00:00Z',
          offerType: 4,
          offerIdentifier: 'come_back_3m',
          offerDiscountType: 'PAY_UP_FRONT',
          offerPeriod: 'P3M',
          price: 4990,
        }),
        renewalInfo('wb1'),
      ),
      notification(
        'SUBSCRIBED',
        'INITIAL_BUY',
        '2026-06-05T00:00:00Z',
        tx(member, 'fs1', { id: 'fs1', purchased: '2026-06-05T00:00:00Z', expires: '2026-07-05T00:00:00Z', inAppOwnershipType: 'FAMILY_SHARED' }),
        renewalInfo('fs1'),
      ),
    );
    const expected = {
      'apple:wb1': {
        offerType: 'WIN_BACK',
        discountId: 'come_back_3m',
        offerDiscountType: 'PAY_UP_FRONT',
        offerPeriod: 'P3M',
        ownershipType: 'PURCHASED',
        amountMicros: 4990000,
      },
      'apple:fs1': { ownershipType: 'FAMILY_SHARED' },
    };
    for (const [id, fields] of Object.entries(expected)) expect(await transaction(id)).toMatchObject(fields);
    expect((await transaction('apple:fs1'))!.offerType).toBeUndefined();
    expect((await customer(member)).customerInfo).toMatchObject({ activeSubscriber: true });
    expect((await customer(buyer)).customerInfo).toMatchObject({ activeSubscriber: true });

    const env = { DATABASE_URL: db.url, LOG_LEVEL: 'error' };
    const verify = await runCli(['rebuild', '--verify'], env);
    expect({ code: verify.code, out: verify.stdout }).toMatchObject({ code: 0, out: expect.stringMatching(/equal a fresh projection/) });
    expect((await runCli(['rebuild'], env)).code).toBe(0);
    for (const [id, fields] of Object.entries(expected)) expect(await transaction(id)).toMatchObject(fields);
  });

  it("given a notification, then its row's provenance names it: store-notification, Apple's notificationUUID, when the log received it; a redelivery keeps the first", async () => {
    const u = randomUUID();
    const body = notification(
      'SUBSCRIBED',
      'INITIAL_BUY',
      '2026-06-02T00:00:00Z',
      tx(u, 's20', { id: 's20', purchased: '2026-06-02T00:00:00Z', expires: '2026-07-02T00:00:00Z' }),
      renewalInfo('s20'),
    );
    const { notificationUUID } = JSON.parse(Buffer.from(body.signedPayload.split('.')[1], 'base64url').toString()) as { notificationUUID: string };
    const before = Date.now();
    await send(body);
    const after = Date.now();
    const row = await transaction('apple:s20');
    expect(row?.provenance).toEqual({
      kind: 'store-notification',
      source: 'apple-app-store-server-notifications',
      eventId: notificationUUID,
      receivedAt: expect.any(String),
    });
    const receivedAt = Date.parse((row!.provenance as { receivedAt: string }).receivedAt);
    expect(receivedAt).toBeGreaterThanOrEqual(before);
    expect(receivedAt).toBeLessThanOrEqual(after);
    await new Promise((resolve) => setTimeout(resolve, 5));
    await send(body);
    expect((await transaction('apple:s20'))?.provenance).toEqual(row?.provenance);
  });

  it('acknowledges TEST without publishing, and a redelivered notification changes nothing', async () => {
    const before = await logSize();
    const res = await post(notification('TEST', undefined, '2026-06-01T00:00:00Z'));
    expect(res).toMatchObject({ status: 200, body: { status: 'acknowledged', events: 0 } });
    expect(await logSize()).toBe(before);

    const u = randomUUID();
    const once = notification(
      'SUBSCRIBED',
      'INITIAL_BUY',
      '2026-06-01T00:00:00Z',
      tx(u, 's12', { id: 's12', purchased: '2026-06-01T00:00:00Z', expires: '2026-07-01T00:00:00Z' }),
      renewalInfo('s12'),
    );
    await send(once);
    const first = await customer(u);
    const rows = (await api.get('/v2/transactions?limit=1000', token)).body;
    await send(once);
    expect(await customer(u)).toEqual(first);
    expect((await api.get('/v2/transactions?limit=1000', token)).body).toEqual(rows);
    const metrics = (await api.get('/metrics')).body as string;
    expect(metrics).toMatch(/subscription_records_store_notifications_total\{store="apple",type="TEST",outcome="acknowledged"\} 1/);
  });

  it('refuses with 4xx, publishing nothing: a forged chain, an expired certificate, another bundle id, the other environment, no signedPayload, an unknown app', async () => {
    const other = await createAppleTestCa();
    const expired = await createAppleTestCa({ notBefore: new Date('2020-01-01T00:00:00Z'), notAfter: new Date('2021-01-01T00:00:00Z') });
    const t = tx(randomUUID(), 's13', { id: 's13', purchased: '2026-06-01T00:00:00Z', expires: '2026-07-01T00:00:00Z' });
    const before = await logSize();
    const cases: [unknown, number, RegExp][] = [
      [
        notification('SUBSCRIBED', 'INITIAL_BUY', '2026-06-01T00:00:00Z', t, undefined, { signer: other }),
        400,
        /signedPayload failed verification: VERIFICATION_FAILURE/,
      ],
      [notification('SUBSCRIBED', 'INITIAL_BUY', '2026-06-01T00:00:00Z', t, undefined, { signer: expired }), 400, /failed verification/],
      [notification('SUBSCRIBED', 'INITIAL_BUY', '2026-06-01T00:00:00Z', t, undefined, { bundleId: 'com.example.other' }), 400, /INVALID_APP_IDENTIFIER/],
      [
        notification('SUBSCRIBED', 'INITIAL_BUY', '2026-06-01T00:00:00Z', t, undefined, { environment: 'Production' }),
        400,
        /INVALID_APP_IDENTIFIER|INVALID_ENVIRONMENT/,
      ],
      [{ signedPayload: 'not.a.jws' }, 400, /signedPayload failed verification/],
      [{ nothing: true }, 400, /signedPayload string/],
    ];
    for (const [body, status, detail] of cases) {
      const res = await post(body);
      expect({ status: res.status, code: res.body.code }).toEqual({ status, code: 'notification_unverified' });
      expect(res.body.detail).toMatch(detail);
    }
    const unknown = await post(notification('TEST', undefined, '2026-06-01T00:00:00Z'), 'app-unknown');
    expect(unknown).toMatchObject({ status: 404, body: { code: 'not_found' } });
    expect(await logSize()).toBe(before);
  });

  it('sample-notification apple prints a body the service takes once it trusts the local test CA', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'sr-sample-'));
    const sample = await runCli(['sample-notification', 'apple', '--bundle-id', 'com.example.sample', '--user', 'zoe'], { DATA_DIR: dataDir });
    expect(sample.code).toBe(0);
    expect(sample.stderr).toContain(`APPLE_ROOT_CERTIFICATES=${path.join(dataDir, 'apple-test-ca', 'root.der')}`);
    const sampleApp = await startTestApp({
      databaseUrl: db.url,
      env: {
        CONSUMER_ENABLED: 'false',
        APPLE_ROOT_CERTIFICATES: path.join(dataDir, 'apple-test-ca', 'root.der'),
        APPLE_APPS: 'sample-app:com.example.sample:Sandbox',
      },
    });
    try {
      const res = await fetch(`${sampleApp.baseUrl}/v2/notifications/apple/sample-app`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: sample.stdout,
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ status: 'published', events: 2 });
      await caughtUp();
      const zoe = (await api.get('/v2/customers?applicationUsername=zoe', api.token('sample-app'))).body.rows[0];
      expect(zoe).toMatchObject({ applicationUsername: 'zoe', receiptIds: [expect.stringMatching(/^apple:\d+$/)] });
      expect(zoe.customerInfo.expirationDate).toEqual(expect.stringMatching(/^\d{4}-\d\d-\d\dT/));
    } finally {
      await sampleApp.close();
    }
    const refused = await runCli(['sample-notification', 'google'], { DATA_DIR: dataDir });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('sample-notification takes one store: apple');
  });

  it('answers 503 with Retry-After while the log cannot take the events, so Apple retries', async () => {
    await db.dataSource.query('ALTER TABLE public.event_log RENAME TO event_log_away');
    try {
      const res = await post(
        notification(
          'SUBSCRIBED',
          'INITIAL_BUY',
          '2026-06-01T00:00:00Z',
          tx(randomUUID(), 's14', { id: 's14', purchased: '2026-06-01T00:00:00Z', expires: '2026-07-01T00:00:00Z' }),
        ),
      );
      expect(res).toMatchObject({ status: 503, body: { code: 'event_log_unavailable' } });
      expect(res.headers.get('retry-after')).toBe('5');
    } finally {
      await db.dataSource.query('ALTER TABLE public.event_log_away RENAME TO event_log');
    }
  });
});
