import { jest } from '@jest/globals';
import { spawn } from 'node:child_process';
import { randomUUID, X509Certificate } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAppleTestCa, type AppleTestCa } from '../../src/store-notifications/apple/apple-test-ca.js';
import { startAppleStoreMock, type AppleStoreMock, type MockTransaction } from '../utils/apple-store-mock.js';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { embeddedLogCaughtUp } from '../utils/events.js';
import { expectEventually } from '../utils/expect-eventually.js';
import { startGooglePlayMock } from '../utils/google-play-mock.js';
import { runCli, serviceEnv, writeTempFile } from '../utils/processes.js';
import { startReceiver } from '../utils/webhook-receiver.js';

jest.setTimeout(120_000);

// `reconcile` as an operator runs it (the built CLI, a child process) and as the service schedules
// it, against loopback mocks of both stores, into the embedded log of a real PostgreSQL that a
// running service projects. The read models are first given what the stores said then; the stores
// then move on without a notification (a renewal, an expiry, a refund, an intent change), and the
// answers are read over HTTP.
const APP = 'app-r';
const BUNDLE = 'com.example.reconcile';
const PACKAGE = 'com.example.reconcile';
const DAY = 86_400_000;
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const at = (offsetMs: number) => new Date(Date.now() + offsetMs).toISOString();
type Row = Record<string, unknown>;

let ca: AppleTestCa;
let apple: AppleStoreMock;
let google: Awaited<ReturnType<typeof startGooglePlayMock>>;
let db: TestDatabase;
let api: TestApp;
let hook: Awaited<ReturnType<typeof startReceiver>>;
/** Webhooks to a loopback receiver, delivered without waiting (test/webhooks' settings). */
const WEBHOOKS = { WEBHOOK_ALLOW_HOSTS: '127.0.0.1', WEBHOOK_POLL_MS: '50', WEBHOOK_RETRY_BASE_MS: '50', WEBHOOK_TIMEOUT_MS: '500' };
let env: Record<string, string>;
/** How long ago the Apple mock signs what it answers: a state the store vouched for long ago is due for the sample. */
let signedAgo = 60_000;
let seq = 7_000_000;
const nextId = () => String(++seq);

/** One monthly Apple subscription whose current period started `startDaysAgo` ago. */
function appleSub(user: string, startDaysAgo: number): MockTransaction {
  const id = nextId();
  const start = Date.now() - startDaysAgo * DAY;
  return {
    transactionId: id,
    originalTransactionId: id,
    productId: 'pro_monthly',
    purchaseDate: start,
    originalPurchaseDate: start,
    expiresDate: start + 30 * DAY,
    type: 'Auto-Renewable Subscription',
    quantity: 1,
    inAppOwnershipType: 'PURCHASED',
    transactionReason: 'PURCHASE',
    price: 4990,
    currency: 'USD',
    appAccountToken: user,
  };
}

/** A SubscriptionPurchaseV2 as purchases.subscriptionsv2.get documents it. */
function googleSub(o: { order: string; user: string; expires: string; state?: string; renew?: boolean }) {
  return {
    kind: 'androidpublisher#subscriptionPurchaseV2',
    regionCode: 'DE',
    startTime: at(-40 * DAY),
    subscriptionState: o.state ?? 'SUBSCRIPTION_STATE_ACTIVE',
    latestOrderId: o.order,
    acknowledgementState: 'ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED',
    externalAccountIdentifiers: { obfuscatedExternalAccountId: o.user },
    lineItems: [
      {
        productId: 'pro_monthly',
        expiryTime: o.expires,
        autoRenewingPlan: { autoRenewEnabled: o.renew ?? true, recurringPrice: { currencyCode: 'EUR', units: '4', nanos: 990000000 } },
        offerDetails: { basePlanId: 'monthly', offerTags: [] },
        latestSuccessfulOrderId: o.order,
      },
    ],
  };
}

const logSize = async () => Number((await db.dataSource.query(`SELECT count(*)::int AS n FROM public.event_log`))[0].n);
const customer = async (user: string) => (await api.get(`/v2/customers?applicationUsername=${encodeURIComponent(user)}`, api.token(APP))).body.rows[0];
const transactions = async () => (await api.get('/v2/transactions?limit=1000', api.token(APP))).body.rows as Row[];
const tx = async (id: string) => (await transactions()).find((t) => t.transactionId === id);
const reconcile = (args: string[] = [], more: Record<string, string> = {}) => runCli(['reconcile', '--app', APP, ...args], { ...env, ...more });

/** Every row the change feed shows after `cursor`, in order, and the cursor after them. */
async function feedAfter(cursor: string): Promise<{ rows: Row[]; next: string }> {
  const rows: Row[] = [];
  for (;;) {
    const res = await api.get(`/v2/transactions?changedAfter=${encodeURIComponent(cursor)}&limit=50`, api.token(APP));
    expect(res.status).toBe(200);
    rows.push(...(res.body.rows as Row[]));
    cursor = res.body.paging.next;
    if (res.body.rows.length === 0) return { rows, next: cursor };
  }
}

beforeAll(async () => {
  ca = await createAppleTestCa();
  apple = await startAppleStoreMock({ ca, bundleId: BUNDLE, signedAt: () => Date.now() - signedAgo });
  google = await startGooglePlayMock();
  db = await createTestDatabase('reconcile');
  const rootFile = writeTempFile('apple-root.pem', new X509Certificate(ca.root).toString());
  const keyFile = writeTempFile('SubscriptionKey_REC.p8', apple.privateKeyPem);
  env = {
    DATABASE_URL: db.url,
    APPLE_ROOT_CERTIFICATES: rootFile,
    APPLE_APPS: `${APP}:${BUNDLE}:Sandbox`,
    APPLE_API_KEYS: `${APP}:57246542-96fe-1a63-e053-0824d011072a:REC123:${keyFile}`,
    APPLE_API_BASE_URL: apple.base,
    GOOGLE_APPS: `${APP}:${PACKAGE}`,
    GOOGLE_PUBSUB_AUDIENCE: `https://records.example.com/v2/notifications/google/${APP}`,
    GOOGLE_SERVICE_ACCOUNT_FILE: writeTempFile('play-key.json', google.serviceAccountKey),
    GOOGLE_API_BASE_URL: google.base,
    GOOGLE_API_SELF_SIGNED_JWT: 'true',
    IMPORT_CONCURRENCY: '4',
  };
  api = await startTestApp({ databaseUrl: db.url, env: { CONSUMER_ENABLED: 'true', ...WEBHOOKS } });
  hook = await startReceiver();
});
afterAll(async () => {
  await api?.close();
  await hook?.close();
  await db?.drop();
  await apple?.close();
  await google?.close();
});

describe('reconcile (e2e: built CLI and the schedule, loopback App Store and Play mocks, real PostgreSQL, embedded log)', () => {
  const users = Object.fromEntries(
    ['aRenewed', 'aExpired', 'aRefunded', 'aLapsing', 'aCertain', 'aEnded', 'gRenewed', 'gExpired', 'gRefunded', 'gLapsing', 'gCertain'].map((k) => [
      k,
      k.startsWith('a') ? randomUUID() : `${k}-${randomUUID().slice(0, 8)}`,
    ]),
  ) as Record<string, string>;
  const id = randomUUID().slice(0, 8);
  const token = (k: string) => `tok-${k}-${id}`;
  const order = (k: string) => `GPA.${id}-${k}`;
  const a: Record<string, MockTransaction> = {};

  it('heals a missed renewal, expiry, refund and intent change on both stores in one pass; certain ones are not asked; a second pass publishes nothing', async () => {
    // What the stores said when the read models last heard (notifications since then were lost).
    a.renewed = appleSub(users.aRenewed, 32); // access ended 2 days ago, set to renew: the renewal was never announced
    a.expired = appleSub(users.aExpired, 33); // ended 3 days ago: the expiry was never announced
    a.refunded = appleSub(users.aRefunded, 10); // active; Apple refunded it later
    a.lapsing = appleSub(users.aLapsing, 10); // active; the customer turned auto-renew off later
    a.certain = appleSub(users.aCertain, 5); // active, nothing lost
    a.ended = appleSub(users.aEnded, 45); // expired long ago, Apple said so
    for (const t of Object.values(a)) apple.addCustomer([t]);
    apple.setStatus(a.ended.originalTransactionId, { status: 2, renewal: { autoRenewStatus: 0, expirationIntent: 1 } });
    // The refund and the intent change are on subscriptions the store vouched for long ago (the rotating sample's).
    signedAgo = 40 * DAY;
    const stale = await runCli(
      ['import', 'apple', '--app', APP, '--file', writeTempFile('stale.csv', `${a.refunded.transactionId}\n${a.lapsing.transactionId}\n`)],
      env,
    );
    expect(stale.code).toBe(0);
    signedAgo = 60_000;
    const fresh = await runCli(
      [
        'import',
        'apple',
        '--app',
        APP,
        '--file',
        writeTempFile('fresh.csv', [a.renewed, a.expired, a.certain, a.ended].map((t) => t.transactionId).join('\n')),
      ],
      env,
    );
    expect(fresh.code).toBe(0);

    google.setSubscription(PACKAGE, token('renewed'), googleSub({ order: order('R'), user: users.gRenewed, expires: at(-2 * DAY) }));
    google.setSubscription(PACKAGE, token('expired'), googleSub({ order: order('E'), user: users.gExpired, expires: at(-3 * DAY) }));
    // ended 3 days ago set to renew: its expiry and its refund were both lost (one event heals both)
    google.setSubscription(PACKAGE, token('refunded'), googleSub({ order: order('F'), user: users.gRefunded, expires: at(-3 * DAY) }));
    google.setSubscription(PACKAGE, token('certain'), googleSub({ order: order('C'), user: users.gCertain, expires: at(25 * DAY) }));
    const imported = await runCli(
      ['import', 'google', '--app', APP, '--file', writeTempFile('g.csv', ['renewed', 'expired', 'refunded', 'certain'].map(token).join('\n'))],
      env,
    );
    expect(imported.code).toBe(0);
    // The lapsing one as its last notification left it, 40 days ago.
    const seeded = {
      specversion: '1.0',
      id: `seed-${id}`,
      source: 'google-play-rtdn',
      type: 'transaction.updated',
      time: at(-40 * DAY),
      appid: APP,
      data: {
        transactionId: `google:${order('L')}`,
        purchaseId: `google:${order('L')}`,
        productId: 'google:pro_monthly',
        platform: 'google',
        receiptId: `google:${token('lapsing')}`,
        applicationUsername: users.gLapsing,
        sandbox: false,
        purchaseDate: at(-40 * DAY),
        expirationDate: at(20 * DAY),
        renewalIntent: 'Renew',
        isAcknowledged: true,
        amountMicros: 4990000,
        currency: 'EUR',
      },
    };
    expect((await runCli(['publish', writeTempFile('seed.ndjson', JSON.stringify(seeded) + '\n')], env)).code).toBe(0);
    await embeddedLogCaughtUp(db.dataSource);
    expect((await customer(users.aRenewed)).customerInfo).toMatchObject({ activeSubscriber: false, renewalIntent: 'Renew' });

    // The stores move on; no notification arrives.
    const renewal: MockTransaction = {
      ...a.renewed,
      transactionId: nextId(),
      purchaseDate: a.renewed.expiresDate as number,
      expiresDate: (a.renewed.expiresDate as number) + 30 * DAY,
      transactionReason: 'RENEWAL',
    };
    apple.addTransaction(a.renewed.transactionId, renewal);
    apple.setStatus(a.expired.originalTransactionId, { status: 2, renewal: { autoRenewStatus: 0, expirationIntent: 1 } });
    Object.assign(a.refunded, { revocationDate: Date.now() - DAY, revocationReason: 0, revocationType: 'REFUND_FULL', revocationPercentage: 100000 });
    apple.setStatus(a.lapsing.originalTransactionId, { status: 1, renewal: { autoRenewStatus: 0 } });
    google.setSubscription(PACKAGE, token('renewed'), googleSub({ order: `${order('R')}..0`, user: users.gRenewed, expires: at(28 * DAY) }));
    google.setSubscription(
      PACKAGE,
      token('expired'),
      googleSub({ order: order('E'), user: users.gExpired, expires: at(-3 * DAY), state: 'SUBSCRIPTION_STATE_EXPIRED', renew: false }),
    );
    google.setSubscription(
      PACKAGE,
      token('refunded'),
      googleSub({ order: order('F'), user: users.gRefunded, expires: at(-3 * DAY), state: 'SUBSCRIPTION_STATE_EXPIRED', renew: false }),
    );
    google.addVoided(
      PACKAGE,
      { purchaseToken: token('refunded'), orderId: order('F'), voidedTimeMillis: String(Date.now() - DAY), voidedSource: 0, voidedReason: 1 },
      { subscription: true, seenAt: Date.now() - DAY },
    );
    google.setSubscription(PACKAGE, token('lapsing'), googleSub({ order: order('L'), user: users.gLapsing, expires: at(20 * DAY), renew: false }));

    // --dry-run: what differs, per subscription, and nothing published.
    const size = await logSize();
    const dry = await reconcile(['--dry-run']);
    expect(dry.stderr).toMatch(/would heal 8 subscription\(s\)/);
    expect(dry.code).toBe(0);
    const said = dry.stdout.trim().split('\n');
    const line = (receipt: string) => said.find((l) => l.startsWith(`${receipt} `)) ?? `no line for ${receipt} in:\n${dry.stdout}`;
    expect(line(`apple:${a.renewed.originalTransactionId}`)).toContain(`missed_renewal: apple:${renewal.transactionId} (not stored)`);
    expect(line(`apple:${a.expired.originalTransactionId}`)).toMatch(/ missed_expiry.*is_expired null -> true/);
    expect(line(`apple:${a.refunded.originalTransactionId}`)).toMatch(/ missed_refund: .*revocation_date null -> "/);
    expect(line(`apple:${a.lapsing.originalTransactionId}`)).toMatch(/ wrong_intent: .*renewal_intent "Renew" -> "Lapse"/);
    expect(line(`google:${token('renewed')}`)).toContain(`missed_renewal: google:${order('R')}..0 (not stored)`);
    expect(line(`google:${token('expired')}`)).toMatch(/ missed_expiry/);
    // The order's state (expired, set to lapse) and Google's void of it, in one snapshot.
    expect(line(`google:${token('refunded')}`)).toMatch(
      / missed_refund: .*renewal_intent "Renew" -> "Lapse".*is_expired null -> true.*revocation_date null -> "/,
    );
    expect(line(`google:${token('lapsing')}`)).toMatch(/ wrong_intent/);
    expect(said).toHaveLength(8);
    expect(await logSize()).toBe(size);
    expect(await db.dataSource.query(`SELECT 1 FROM public.reconcile_runs UNION ALL SELECT 1 FROM public.reconcile_checks`)).toEqual([]);

    // A webhook endpoint from here on: it is sent every change after it was added.
    const added = await runCli(['webhooks', 'add', '--app', APP, '--url', hook.url], { ...env, WEBHOOK_ALLOW_HOSTS: '127.0.0.1' });
    expect(added.code).toBe(0);

    // The pass, with both stores rate limiting at first: every worker waits out Retry-After, the pass completes.
    const { next: cursor } = await feedAfter('0');
    const [appleBefore, googleBefore, limitedBefore] = [apple.received.length, google.calls.length, apple.counts.limited];
    apple.rateLimitNext(2, 1000);
    google.rateLimitNextCalls(2, '1');
    const started = Date.now();
    const pass = await reconcile();
    expect(pass.stderr).toMatch(/healed 8 subscription\(s\) \(missed_renewal 2, missed_expiry 2, missed_refund 2, wrong_intent 2\)/);
    expect(pass.stderr).toMatch(/failed 0/);
    expect(pass.code).toBe(0);
    expect(apple.counts.limited - limitedBefore).toBe(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    // A log line per healed subscription names the kind and the subscription, never the username.
    expect(pass.stderr).toContain(`healed apple:${a.renewed.originalTransactionId}: missed_renewal`);
    expect(pass.stderr).toContain(`healed google:${token('lapsing')}: wrong_intent`);
    for (const user of Object.values(users)) expect(pass.stderr).not.toContain(user);

    // Subscriptions whose state is certain cost no store call.
    const appleAsked = apple.received.slice(appleBefore).map((r) => r.path);
    const googleAsked = google.calls.slice(googleBefore);
    for (const t of [a.certain, a.ended]) expect(appleAsked.filter((p) => p.includes(t.transactionId))).toEqual([]);
    expect(googleAsked.filter((c) => c.includes(token('certain')))).toEqual([]);
    // A suspect's statuses first; its history only because they disagree (a renewal they name that is not stored).
    expect([...new Set(appleAsked.filter((p) => p.includes(a.renewed.transactionId)))].sort()).toEqual([
      `/inApps/v1/subscriptions/${a.renewed.transactionId}`,
      `/inApps/v2/history/${a.renewed.transactionId}`,
    ]);

    // Every customer as the store says.
    await embeddedLogCaughtUp(db.dataSource);
    expect((await customer(users.aRenewed)).customerInfo).toMatchObject({
      activeSubscriber: true,
      renewalIntent: 'Renew',
      expirationDate: new Date(renewal.expiresDate as number).toISOString(),
    });
    expect((await customer(users.aExpired)).customerInfo).toMatchObject({ activeSubscriber: false, renewalIntent: 'Lapse' });
    expect((await customer(users.aRefunded)).customerInfo).toMatchObject({ activeSubscriber: false });
    expect(await tx(`apple:${a.refunded.transactionId}`)).toMatchObject({ revocationDate: new Date(a.refunded.revocationDate as number).toISOString() });
    expect((await customer(users.aLapsing)).customerInfo).toMatchObject({ activeSubscriber: true, renewalIntent: 'Lapse' });
    expect((await customer(users.gRenewed)).customerInfo).toMatchObject({ activeSubscriber: true, renewalIntent: 'Renew' });
    expect(await tx(`google:${order('R')}..0`)).toMatchObject({ receiptId: `google:${token('renewed')}`, purchaseId: `google:${order('R')}` });
    expect((await customer(users.gExpired)).customerInfo).toMatchObject({ activeSubscriber: false, renewalIntent: 'Lapse' });
    expect((await customer(users.gRefunded)).customerInfo).toMatchObject({ activeSubscriber: false });
    expect(await tx(`google:${order('F')}`)).toMatchObject({
      revocationDate: expect.any(String),
      revocationType: 'REFUND_FULL',
      isExpired: true,
      renewalIntent: 'Lapse',
    });
    expect((await customer(users.gLapsing)).customerInfo).toMatchObject({ activeSubscriber: true, renewalIntent: 'Lapse' });
    for (const k of ['aCertain', 'gCertain']) expect((await customer(users[k])).customerInfo).toMatchObject({ activeSubscriber: true, renewalIntent: 'Renew' });

    // The change feed shows each healed row once, and nothing else.
    const healedRows = [
      `apple:${renewal.transactionId}`,
      `apple:${a.expired.transactionId}`,
      `apple:${a.refunded.transactionId}`,
      `apple:${a.lapsing.transactionId}`,
      `google:${order('R')}..0`,
      `google:${order('E')}`,
      `google:${order('F')}`,
      `google:${order('L')}`,
    ];
    const { rows: changed, next } = await feedAfter(cursor);
    expect(changed.map((r) => r.transactionId).sort()).toEqual([...healedRows].sort());
    // Where each healed row's state came from.
    for (const r of changed)
      expect([r.transactionId, r.provenance]).toEqual([
        r.transactionId,
        expect.objectContaining({ kind: 'reconciliation', source: 'subscription-records-reconciliation', eventId: expect.stringMatching(/^reconcile:/) }),
      ]);

    // Webhooks: each healed row once, nothing else, from the reconciliation.
    const sentRows = () => hook.received.filter((r) => r.message.data.transactionId !== undefined).map((r) => r.message.data);
    await expectEventually(
      () =>
        expect(
          sentRows()
            .map((r) => String(r.transactionId))
            .sort(),
        ).toEqual([...healedRows].sort()),
      30_000,
    );
    expect(sentRows().find((r) => r.transactionId === `google:${order('F')}`)).toMatchObject({ revocationType: 'REFUND_FULL', isExpired: true });
    for (const r of sentRows()) expect(r.provenance).toMatchObject({ kind: 'reconciliation' });
    const sentBefore = sentRows().length;

    // A second pass, and a pass over every subscription: the store says what the read models show, nothing is published.
    const after = await logSize();
    const again = await reconcile();
    expect(again.stderr).toMatch(/healed 0 subscription\(s\) \(no drift\), published 0 event\(s\)/);
    const [historyBefore, statusesBefore] = [apple.counts.history, apple.counts.statuses];
    const all = await reconcile(['--all']);
    // Apple's statuses agreeing with the read models, its histories are not asked for.
    expect(apple.counts.statuses - statusesBefore).toBe(6);
    expect(apple.counts.history).toBe(historyBefore);
    expect(all.stderr).toMatch(/asked \d+ \(all 11, voided 1\), healed 0 subscription\(s\) \(no drift\), published 0 event\(s\)/);
    expect(all.code).toBe(0);
    expect(await logSize()).toBe(after);
    await embeddedLogCaughtUp(db.dataSource);
    expect((await feedAfter(next)).rows).toEqual([]);
    expect(sentRows()).toHaveLength(sentBefore);
  });

  it('runs on RECONCILE_INTERVAL in one instance at a time, and counts drift and store calls in /metrics', async () => {
    const user = `gSched-${id}`;
    google.setSubscription(PACKAGE, token('sched'), googleSub({ order: order('S'), user, expires: at(-2 * DAY) }));
    expect((await runCli(['import', 'google', '--app', APP, '--file', writeTempFile('s.csv', `${token('sched')}\n`)], env)).code).toBe(0);
    await embeddedLogCaughtUp(db.dataSource);
    google.setSubscription(PACKAGE, token('sched'), googleSub({ order: `${order('S')}..0`, user, expires: at(28 * DAY) }));

    const scheduled = { ...env, CONSUMER_ENABLED: 'false', RECONCILE_INTERVAL: '1h' };
    delete (scheduled as Record<string, string | undefined>).DATABASE_URL;
    const instances = await Promise.all([startTestApp({ databaseUrl: db.url, env: scheduled }), startTestApp({ databaseUrl: db.url, env: scheduled })]);
    try {
      await expectEventually(async () => {
        await embeddedLogCaughtUp(db.dataSource);
        expect((await customer(user)).customerInfo).toMatchObject({ activeSubscriber: true });
        expect(await tx(`google:${order('S')}..0`)).toMatchObject({ receiptId: `google:${token('sched')}`, renewalIntent: 'Renew' });
      }, 30_000);
      const published = await db.dataSource.query(
        `SELECT count(*)::int AS n FROM public.event_log WHERE convert_from(value, 'UTF8') LIKE '%reconcile:google:' || $1 || '%'`,
        [`${order('S')}..0`],
      );
      expect(published[0].n).toBe(1);
      // A notification signed two minutes before it arrives: the delay histogram has it between 60 and 300 seconds.
      const signedPayload = apple.signNotification({ notificationType: 'TEST', notificationUUID: randomUUID(), signedDate: Date.now() - 120_000 });
      const posted = await fetch(`${instances[0].baseUrl}/v2/notifications/apple/${APP}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ signedPayload }),
      });
      expect(posted.status).toBe(200);
      const metrics = (await Promise.all(instances.map((i) => i.get('/metrics')))).map((m) => String(m.body)).join('\n');
      expect(metrics).toMatch(/subscription_records_store_notification_delay_seconds_bucket\{le="60",store="apple"\} 0/);
      expect(metrics).toMatch(/subscription_records_store_notification_delay_seconds_bucket\{le="300",store="apple"\} 1/);
      expect(metrics).toMatch(/subscription_records_reconcile_drift_total\{kind="missed_renewal"\} 1/);
      expect(metrics).toMatch(/subscription_records_store_api_calls_total\{store="google",outcome="ok"\} \d+/);
      expect(metrics).toMatch(/subscription_records_reconcile_checked_total\{reason="renewal_overdue"\} 1/);
    } finally {
      for (const i of instances) await i.close();
    }
  });
  it('resumes after SIGKILL: the next run continues the same pass, and every subscription ends healed once', async () => {
    const subs = Array.from({ length: 40 }, () => appleSub(randomUUID(), 32));
    for (const t of subs) apple.addCustomer([t]);
    expect((await runCli(['import', 'apple', '--app', APP, '--file', writeTempFile('k.csv', subs.map((t) => t.transactionId).join('\n'))], env)).code).toBe(0);
    await embeddedLogCaughtUp(db.dataSource);
    const renewals = subs.map((t) => {
      const r: MockTransaction = { ...t, transactionId: nextId(), purchaseDate: t.expiresDate as number, expiresDate: (t.expiresDate as number) + 30 * DAY };
      apple.addTransaction(t.transactionId, r);
      return r;
    });
    apple.slowDown(40);
    const child = spawn(process.execPath, [path.join(root, 'dist/cli.js'), 'reconcile', '--app', APP], {
      env: serviceEnv({ ...env, IMPORT_CONCURRENCY: '1' }),
      cwd: root,
    });
    const exited = new Promise((resolve) => child.on('exit', resolve));
    const journaled = async () =>
      Number(
        (
          await db.dataSource.query(`SELECT count(*)::int AS n FROM public.import_journal WHERE kind = 'reconcile' AND app_id = $1 AND outcome = 'imported'`, [
            APP,
          ])
        )[0].n,
      );
    const before = await journaled();
    await expectEventually(async () => expect(await journaled()).toBeGreaterThan(before + 5), 30_000, 20);
    child.kill('SIGKILL');
    await exited;
    const killedDone = (await journaled()) - before;
    apple.slowDown(0);
    expect(await db.dataSource.query(`SELECT mode FROM public.reconcile_runs WHERE app_id = $1 AND finished_at IS NULL`, [APP])).toEqual([{ mode: 'suspect' }]);

    const resumed = await reconcile();
    expect(resumed.code).toBe(0);
    const m = /\(suspect, resumed\): .*healed (\d+) subscription\(s\)/.exec(resumed.stderr);
    expect(m).not.toBeNull();
    // What the killed run recorded is not healed again (journal, or healed already); the rest is.
    expect(Number(m![1])).toBeLessThan(40);
    expect(Number(m![1]) + killedDone).toBeGreaterThanOrEqual(40);
    await embeddedLogCaughtUp(db.dataSource);
    const ids = new Set((await transactions()).map((t) => t.transactionId));
    expect(renewals.filter((r) => !ids.has(`apple:${r.transactionId}`))).toEqual([]);
    // Each renewal under one event id (a batch in flight at the kill may be sent twice, under the same id).
    const published = (await db.dataSource.query(
      `SELECT DISTINCT convert_from(value, 'UTF8')::json->>'id' AS id FROM public.event_log WHERE convert_from(value, 'UTF8') LIKE '%"reconcile:apple:%'`,
    )) as { id: string }[];
    for (const r of renewals) expect(published.filter((p) => p.id.startsWith(`reconcile:apple:${r.transactionId}:`))).toHaveLength(1);
    expect(await db.dataSource.query(`SELECT 1 FROM public.reconcile_runs WHERE app_id = $1 AND finished_at IS NULL`, [APP])).toEqual([]);
    expect((await reconcile()).stderr).toMatch(/healed 0 subscription\(s\)/);
  });

  it('rotates the sample: subscriptions whose answers keep failing do not hold its places, every one is reached', async () => {
    // Four Google subscriptions last vouched for 40 days ago, nothing else due; the store's answers for the first two fail (a date that is no date).
    const keys = ['s1', 's2', 's3', 's4'];
    for (const k of keys) {
      const seeded = {
        specversion: '1.0',
        id: `seed-${k}-${id}`,
        source: 'google-play-rtdn',
        type: 'transaction.updated',
        time: at(-40 * DAY),
        appid: APP,
        data: {
          transactionId: `google:${order(k)}`,
          purchaseId: `google:${order(k)}`,
          productId: 'google:pro_monthly',
          platform: 'google',
          receiptId: `google:${token(k)}`,
          applicationUsername: `${k}-${id}`,
          sandbox: false,
          purchaseDate: at(-40 * DAY),
          expirationDate: at(20 * DAY),
          renewalIntent: 'Renew',
          isAcknowledged: true,
        },
      };
      expect((await runCli(['publish', writeTempFile(`${k}.ndjson`, JSON.stringify(seeded) + '\n')], env)).code).toBe(0);
      const state = googleSub({ order: order(k), user: `${k}-${id}`, expires: at(20 * DAY) });
      if (k === 's1' || k === 's2') state.lineItems[0].expiryTime = 'not a date';
      google.setSubscription(PACKAGE, token(k), state);
    }
    await embeddedLogCaughtUp(db.dataSource);
    const askedIn = async () => {
      const before = google.calls.length;
      expect((await reconcile([], { RECONCILE_SAMPLE_SIZE: '2' })).stderr).toMatch(/reconcile app-r \(suspect\)/);
      return keys.filter((k) => google.calls.slice(before).some((c) => c.includes(token(k))));
    };
    const first = await askedIn();
    const second = await askedIn();
    expect(first).toHaveLength(2);
    expect([...first, ...second].sort()).toEqual(keys);
    // The failing ones are never recorded as checked: the rotation comes back to them.
    const third = await askedIn();
    expect(third.sort()).toEqual(['s1', 's2']);
  });
});
