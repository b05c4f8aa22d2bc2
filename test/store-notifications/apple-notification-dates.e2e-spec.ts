import { jest } from '@jest/globals';
import { randomUUID, X509Certificate } from 'node:crypto';
import type { Clock } from '../../src/common/clock.js';
import { createAppleTestCa, signAppleJws, type AppleTestCa } from '../../src/store-notifications/apple/apple-test-ca.js';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { writeTempFile } from '../utils/processes.js';

// The dates in an App Store notification are the payload's word: they must neither crash the
// service (a date no Date can hold answered 500) nor choose when the certificate chain is judged
// (an expired chain verified at the old date the payload claimed). docs/events/apple.md: a date
// outside the years 0001-9999 is 422 notification_unmappable; a chain is checked at the signedDate
// only when that lies within a week before now (Apple's retries span 157 hours), else now.

jest.setTimeout(120_000);

const NOW = new Date('2026-06-15T12:00:00Z');
const clock: Clock = { now: () => NOW };
const BUNDLE = 'com.example.dates';
const DAY = 86_400_000;
const ms = (iso: string) => Date.parse(iso);

describe("App Store notification dates (e2e: real PostgreSQL, embedded log, Apple's verifier)", () => {
  let db: TestDatabase;
  let api: TestApp;
  let ca: AppleTestCa;
  /** Each chains to a root the service trusts, so validity dates are all that can fail it. */
  let expired: AppleTestCa;
  let lapsed: AppleTestCa;
  let early: AppleTestCa;

  beforeAll(async () => {
    ca = await createAppleTestCa();
    expired = await createAppleTestCa({ notBefore: new Date('2020-01-01T00:00:00Z'), notAfter: new Date('2021-01-01T00:00:00Z') });
    lapsed = await createAppleTestCa({ notBefore: new Date('2025-01-01T00:00:00Z'), notAfter: new Date(NOW.getTime() - 3 * DAY) });
    early = await createAppleTestCa({ notBefore: new Date(NOW.getTime() + DAY), notAfter: new Date('2099-01-01T00:00:00Z') });
    const roots = [ca, expired, lapsed, early].map((c, i) => writeTempFile(`root-${i}.pem`, new X509Certificate(c.root).toString()));
    db = await createTestDatabase('appledates');
    api = await startTestApp({
      databaseUrl: db.url,
      clock,
      env: { CONSUMER_ENABLED: 'false', APPLE_ROOT_CERTIFICATES: roots.join(','), APPLE_APPS: `app-1:${BUNDLE}:Sandbox` },
    });
  });
  afterAll(async () => {
    await api?.close();
    await db?.drop();
  });

  const post = (body: unknown) =>
    fetch(`${api.baseUrl}/v2/notifications/apple/app-1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(
      async (r) => ({
        status: r.status,
        body: (await r.json()) as { status?: string; code?: string; detail?: string },
      }),
    );
  const logSize = async () => Number((await db.dataSource.query(`SELECT count(*)::int AS n FROM public.event_log`))[0].n);
  const envelope = (signedDate: number, data: object = {}) => ({
    notificationUUID: randomUUID(),
    version: '2.0',
    signedDate,
    data: { bundleId: BUNDLE, environment: 'Sandbox', status: 1, ...data },
  });
  const transaction = (id: string, o: object = {}) => ({
    transactionId: id,
    originalTransactionId: id,
    bundleId: BUNDLE,
    productId: 'pro_monthly',
    purchaseDate: ms('2026-06-01T00:00:00Z'),
    originalPurchaseDate: ms('2026-06-01T00:00:00Z'),
    expiresDate: ms('2026-07-01T00:00:00Z'),
    type: 'Auto-Renewable Subscription',
    quantity: 1,
    inAppOwnershipType: 'PURCHASED',
    signedDate: ms('2026-06-01T00:00:00Z'),
    environment: 'Sandbox',
    ...o,
  });
  const testNotification = (signer: AppleTestCa, signedDate: number) =>
    post({ signedPayload: signAppleJws(signer, { ...envelope(signedDate), notificationType: 'TEST' }) });

  it('refuses a signedDate outside the years 0001-9999 with 422 notification_unmappable, never 500, publishing nothing', async () => {
    const before = await logSize();
    // 8.64e15 ms is the last instant a Date holds; past it (or before -8.64e15) there is no Date at all.
    for (const signedDate of [8.64e15 + 1, 1e20, -1e20, 8.64e15, ms('+010000-01-01T00:00:00Z'), ms('0000-12-31T23:59:59Z')]) {
      const id = `t-${randomUUID()}`;
      const subscribed = {
        ...envelope(signedDate, { signedTransactionInfo: signAppleJws(ca, transaction(id)) }),
        notificationType: 'SUBSCRIBED',
        subtype: 'INITIAL_BUY',
      };
      for (const payload of [{ ...envelope(signedDate), notificationType: 'TEST' }, subscribed]) {
        const res = await post({ signedPayload: signAppleJws(ca, payload) });
        expect({ signedDate, type: payload.notificationType, status: res.status, code: res.body.code }).toEqual({
          signedDate,
          type: payload.notificationType,
          status: 422,
          code: 'notification_unmappable',
        });
        expect(res.body.detail).toContain('signedPayload.signedDate');
      }
    }
    expect(await logSize()).toBe(before);
  });

  it("refuses a transaction's or renewal info's date no Date can hold with 422 (it threw while mapping: 500)", async () => {
    const before = await logSize();
    for (const [field, value] of [
      ['expiresDate', 1e20],
      ['purchaseDate', -1e20],
      ['revocationDate', 8.64e15 + 1],
    ] as const) {
      const signedTransactionInfo = signAppleJws(ca, transaction(`t-${randomUUID()}`, { [field]: value }));
      const res = await post({
        signedPayload: signAppleJws(ca, {
          ...envelope(NOW.getTime() - DAY, { signedTransactionInfo }),
          notificationType: 'SUBSCRIBED',
          subtype: 'INITIAL_BUY',
        }),
      });
      expect({ field, status: res.status, code: res.body.code, detail: res.body.detail }).toEqual({
        field,
        status: 422,
        code: 'notification_unmappable',
        detail: expect.stringContaining(`signedTransactionInfo.${field}`),
      });
    }
    const signedRenewalInfo = signAppleJws(ca, {
      originalTransactionId: 'r',
      productId: 'pro_monthly',
      autoRenewStatus: 1,
      signedDate: NOW.getTime(),
      environment: 'Sandbox',
      gracePeriodExpiresDate: 1e20,
    });
    const signedTransactionInfo = signAppleJws(ca, transaction(`t-${randomUUID()}`));
    const res = await post({
      signedPayload: signAppleJws(ca, {
        ...envelope(NOW.getTime() - DAY, { signedTransactionInfo, signedRenewalInfo }),
        notificationType: 'DID_FAIL_TO_RENEW',
        subtype: 'GRACE_PERIOD',
      }),
    });
    expect({ status: res.status, code: res.body.code, detail: res.body.detail }).toEqual({
      status: 422,
      code: 'notification_unmappable',
      detail: expect.stringContaining('signedRenewalInfo.gracePeriodExpiresDate'),
    });
    expect(await logSize()).toBe(before);
  });

  it('never verifies a chain that expired years ago, whatever date the payload claims (the years it was valid, or no Date at all)', async () => {
    for (const signedDate of [ms('2020-06-01T00:00:00Z'), 1e20, -1e20, 8.64e15 + 1, NOW.getTime()]) {
      const res = await testNotification(expired, signedDate);
      expect({ signedDate, status: res.status, code: res.body.code }).toEqual({ signedDate, status: 400, code: 'notification_unverified' });
      expect(res.body.detail).toMatch(/^signedPayload failed verification: INVALID_CERTIFICATE/);
    }
  });

  it('checks a chain at the signedDate within the week before now (a retry of what was signed before it expired), else now', async () => {
    // Expired three days before NOW. Signed the day before it expired: a retry Apple may still send.
    expect(await testNotification(lapsed, NOW.getTime() - 4 * DAY)).toMatchObject({ status: 200, body: { status: 'acknowledged' } });
    // Claimed signed after it expired, or three weeks ago (outside the week: checked now): refused.
    for (const signedDate of [NOW.getTime() - 2 * DAY, NOW.getTime() - 21 * DAY, ms('2025-06-01T00:00:00Z')]) {
      expect(await testNotification(lapsed, signedDate)).toMatchObject({
        status: 400,
        body: { code: 'notification_unverified', detail: expect.stringContaining('INVALID_CERTIFICATE') },
      });
    }
    // Valid from tomorrow: a payload dated next month is checked now, and refused.
    expect(await testNotification(early, NOW.getTime() + 30 * DAY)).toMatchObject({
      status: 400,
      body: { code: 'notification_unverified', detail: expect.stringContaining('INVALID_CERTIFICATE') },
    });
    // The trusted, valid chain at the same dates: the refusals above are the certificates' dates.
    expect(await testNotification(ca, NOW.getTime() - 21 * DAY)).toMatchObject({ status: 200 });
    expect(await testNotification(ca, NOW.getTime() + 30 * DAY)).toMatchObject({ status: 200 });
  });
});
