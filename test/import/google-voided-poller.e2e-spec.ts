import { jest } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { embeddedLogCaughtUp } from '../utils/events.js';
import { expectEventually } from '../utils/expect-eventually.js';
import { startGooglePlayMock } from '../utils/google-play-mock.js';
import { runCli, writeTempFile } from '../utils/processes.js';

jest.setTimeout(120_000);

const PACKAGE = 'com.example.poll';
const DAY = 86_400_000;

describe('GOOGLE_VOIDED_POLL_INTERVAL (e2e: the service polls voidedpurchases.list on loopback, real PostgreSQL)', () => {
  let db: TestDatabase;
  const apps: TestApp[] = [];
  let google: Awaited<ReturnType<typeof startGooglePlayMock>>;
  let env: Record<string, string>;

  beforeAll(async () => {
    google = await startGooglePlayMock();
    db = await createTestDatabase('gpoll');
    env = {
      GOOGLE_APPS: `app-p:${PACKAGE}`,
      GOOGLE_PUBSUB_AUDIENCE: 'https://records.example.com/v2/notifications/google/app-p',
      GOOGLE_SERVICE_ACCOUNT_FILE: writeTempFile('play-key.json', google.serviceAccountKey),
      GOOGLE_API_BASE_URL: google.base,
      GOOGLE_API_SELF_SIGNED_JWT: 'true',
    };
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await db?.drop();
    await google?.close();
  });

  it('revokes a refund Google did not notify; two instances poll one at a time and the void is published once', async () => {
    const id = randomUUID().slice(0, 8);
    const order = `GPA.${id}-X`;
    google.setSubscription(PACKAGE, `p-${id}`, {
      kind: 'androidpublisher#subscriptionPurchaseV2',
      startTime: new Date(Date.now() - 10 * DAY).toISOString(),
      subscriptionState: 'SUBSCRIPTION_STATE_ACTIVE',
      acknowledgementState: 'ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED',
      lineItems: [
        {
          productId: 'pro_monthly',
          expiryTime: new Date(Date.now() + 20 * DAY).toISOString(),
          autoRenewingPlan: { autoRenewEnabled: true },
          latestSuccessfulOrderId: order,
        },
      ],
    });
    const imported = await runCli(['import', 'google', '--app', 'app-p', '--file', writeTempFile('t.csv', `p-${id}\n`)], { ...env, DATABASE_URL: db.url });
    expect(imported.code).toBe(0);
    google.addVoided(
      PACKAGE,
      { purchaseToken: `p-${id}`, orderId: order, voidedTimeMillis: String(Date.now() - DAY), voidedSource: 0, voidedReason: 1 },
      { subscription: true, seenAt: Date.now() - 60_000 },
    );

    // Polling is off unless configured: an instance without the setting never lists.
    const plain = await startTestApp({ databaseUrl: db.url, env: { ...env, CONSUMER_ENABLED: 'true' } });
    apps.push(plain);
    await embeddedLogCaughtUp(db.dataSource);
    expect(google.count(/voidedpurchases/)).toBe(0);

    apps.push(await startTestApp({ databaseUrl: db.url, env: { ...env, CONSUMER_ENABLED: 'false', GOOGLE_VOIDED_POLL_INTERVAL: '10' } }));
    apps.push(await startTestApp({ databaseUrl: db.url, env: { ...env, CONSUMER_ENABLED: 'false', GOOGLE_VOIDED_POLL_INTERVAL: '10' } }));
    await expectEventually(async () => {
      await embeddedLogCaughtUp(db.dataSource);
      const [row] = await db.dataSource.query(`SELECT revocation_date FROM read_model.transactions WHERE app_id = 'app-p' AND transaction_id = $1`, [
        `google:${order}`,
      ]);
      expect(row?.revocation_date).not.toBeNull();
    }, 30_000);
    const voids = await db.dataSource.query(`SELECT count(*)::int AS n FROM public.event_log WHERE convert_from(value, 'UTF8') LIKE '%google-voided:%'`);
    expect(voids[0].n).toBe(1);
    // The checkpoint is saved when the poll round ends, after its voids are published (and maybe already projected).
    await expectEventually(async () => {
      const [checkpoint] = await db.dataSource.query(`SELECT checkpoint FROM public.import_checkpoint WHERE app_id = 'app-p' AND kind = 'google-voided'`);
      expect(Number(checkpoint?.checkpoint)).toBeGreaterThan(Date.now() - 60_000);
    }, 10_000);
  });
});
