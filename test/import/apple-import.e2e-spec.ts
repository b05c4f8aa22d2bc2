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
import { createTopic, readAll, topicEndOffsets, uniqueTopic } from '../utils/kafka.js';
import { runCli, serviceEnv, writeTempFile } from '../utils/processes.js';

jest.setTimeout(180_000);

// `import apple` and `import apple-notifications` as an operator runs them (the built CLI, a child
// process) against the loopback App Store mock, into the embedded log of a real PostgreSQL that a
// running service projects; answers read over HTTP.
const BUNDLE = 'com.example.importer';
const DAY = 86_400_000;
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

let ca: AppleTestCa;
let mock: AppleStoreMock;
let db: TestDatabase;
let api: TestApp;
let token: string;
let env: Record<string, string>;
let seq = 1_000_000;
const nextId = () => String(++seq);

/** A subscription chain of `months` monthly periods, the last one starting `lastStartDaysAgo` ago. */
function chain(user: string | undefined, months: number, lastStartDaysAgo: number, product = 'pro_monthly'): MockTransaction[] {
  const original = nextId();
  const firstStart = Date.now() - lastStartDaysAgo * DAY - (months - 1) * 30 * DAY;
  return Array.from({ length: months }, (_, i) => ({
    transactionId: i === 0 ? original : nextId(),
    originalTransactionId: original,
    productId: product,
    purchaseDate: firstStart + i * 30 * DAY,
    originalPurchaseDate: firstStart,
    expiresDate: firstStart + (i + 1) * 30 * DAY,
    type: 'Auto-Renewable Subscription',
    quantity: 1,
    inAppOwnershipType: 'PURCHASED',
    transactionReason: i === 0 ? 'PURCHASE' : 'RENEWAL',
    price: 4990,
    currency: 'USD',
    ...(user ? { appAccountToken: user } : {}),
  }));
}

const consumable = (user?: string): MockTransaction => {
  const id = nextId();
  return {
    transactionId: id,
    originalTransactionId: id,
    productId: 'coins_100',
    purchaseDate: Date.now() - 3 * DAY,
    type: 'Consumable',
    quantity: 1,
    inAppOwnershipType: 'PURCHASED',
    price: 990,
    currency: 'USD',
    ...(user ? { appAccountToken: user } : {}),
  };
};

const logSize = async () => Number((await db.dataSource.query(`SELECT count(*)::int AS n FROM public.event_log`))[0].n);
const customer = async (user: string) => (await api.get(`/v2/customers?applicationUsername=${encodeURIComponent(user)}`, token)).body.rows[0];
const transactions = async () => (await api.get('/v2/transactions?limit=1000', token)).body.rows as Record<string, unknown>[];
const importApple = (file: string, extra: string[] = [], more: Record<string, string> = {}) =>
  runCli(['import', 'apple', '--app', 'app-1', '--file', file, ...extra], { ...env, ...more });

beforeAll(async () => {
  ca = await createAppleTestCa();
  mock = await startAppleStoreMock({ ca, bundleId: BUNDLE, signedAt: () => Date.now() - 60_000 });
  db = await createTestDatabase('appleimport');
  const rootFile = writeTempFile('apple-root.pem', new X509Certificate(ca.root).toString());
  const keyFile = writeTempFile('SubscriptionKey_TEST123.p8', mock.privateKeyPem);
  env = {
    DATABASE_URL: db.url,
    APPLE_ROOT_CERTIFICATES: rootFile,
    APPLE_APPS: `app-1:${BUNDLE}:Sandbox,app-nokey:${BUNDLE}:Sandbox`,
    APPLE_API_KEYS: `app-1:57246542-96fe-1a63-e053-0824d011072a:TEST123:${keyFile}`,
    APPLE_API_BASE_URL: mock.base,
    IMPORT_CONCURRENCY: '4',
  };
  api = await startTestApp({
    databaseUrl: db.url,
    env: { CONSUMER_ENABLED: 'true', APPLE_ROOT_CERTIFICATES: rootFile, APPLE_APPS: `app-1:${BUNDLE}:Sandbox` },
  });
  token = api.token('app-1');
});
afterAll(async () => {
  await api?.close();
  await db?.drop();
  await mock?.close();
});

describe('import apple (e2e: built CLI, loopback App Store mock, real PostgreSQL, embedded log)', () => {
  it('imports existing customers with their renewal state, names bad lines, and a second run changes nothing', async () => {
    const [alice, bob, carol] = [randomUUID(), randomUUID(), randomUUID()];
    const active = chain(alice, 3, 5); // renewed twice, current period started 5 days ago
    const lapsing = chain(undefined, 1, 10); // no appAccountToken: the file names bob
    const expired = chain(carol, 2, 70); // ended 10 days ago
    const coins = consumable(alice);
    mock.addCustomer([...active, coins]);
    mock.addCustomer(lapsing);
    mock.addCustomer(expired);
    mock.setStatus(lapsing[0].originalTransactionId, { status: 1, renewal: { autoRenewStatus: 0 } });
    mock.setStatus(expired[0].originalTransactionId, { status: 2, renewal: { autoRenewStatus: 0, expirationIntent: 1 } });
    const file = writeTempFile(
      'customers.csv',
      [
        active[1].transactionId,
        `${lapsing[0].transactionId},${bob}`,
        'not-a-transaction',
        expired[0].transactionId,
        '',
        '999999999999',
        `${coins.transactionId}`,
      ].join('\n') + '\n',
    );

    const first = await importApple(file);
    expect(first.stderr).toContain('line 3: failed: "not-a-transaction" is not an App Store transaction id');
    expect(first.stderr).toMatch(/line 6: skipped: Apple knows no transaction 999999999999/);
    expect(first.stderr).toContain('imported 4 line(s)');
    expect(first.stderr).toContain('failed 1');
    expect(first.code).toBe(1);
    await embeddedLogCaughtUp(db.dataSource);

    expect((await customer(alice)).customerInfo).toMatchObject({
      activeSubscriber: true,
      renewalIntent: 'Renew',
      expirationDate: new Date(active[2].expiresDate as number).toISOString(),
    });
    expect((await customer(bob)).customerInfo).toMatchObject({ activeSubscriber: true, renewalIntent: 'Lapse' });
    expect((await customer(carol)).customerInfo).toMatchObject({ activeSubscriber: false });
    const ids = (await transactions()).map((t) => t.transactionId);
    for (const t of [...active, ...lapsing, ...expired, coins]) expect(ids).toContain(`apple:${t.transactionId}`);
    // docs/api.md, "Provenance": what the import brought says so
    expect((await transactions()).find((t) => t.transactionId === `apple:${coins.transactionId}`)).toMatchObject({
      provenance: { kind: 'import', source: 'apple-app-store-server-api', eventId: expect.stringMatching(/^apple-import:/) },
    });

    // Again: the journal knows every done line; the failed one fails again; nothing is published.
    const size = await logSize();
    const calls = mock.counts.history;
    const second = await importApple(file);
    expect(second.stderr).toContain('imported 0 line(s) (0 event(s)), unchanged 5');
    expect(await logSize()).toBe(size);
    expect(mock.counts.history).toBe(calls);
  });

  it('--dry-run prints the events and publishes nothing', async () => {
    const user = randomUUID();
    const c = chain(user, 1, 3);
    mock.addCustomer(c);
    const size = await logSize();
    const run = await importApple(writeTempFile('dry.csv', `${c[0].transactionId}\n`), ['--dry-run']);
    expect(run.code).toBe(0);
    const events = run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(events).toEqual([
      expect.objectContaining({
        type: 'transaction.updated',
        appid: 'app-1',
        data: expect.objectContaining({ transactionId: `apple:${c[0].transactionId}`, applicationUsername: user }),
      }),
      expect.objectContaining({ type: 'receipt.linked' }),
    ]);
    expect(run.stderr).toContain('dry run: would import 1 line(s)');
    expect(await logSize()).toBe(size);
  });

  it('backs off on 429 for Retry-After (every worker) and on 503, then imports everything', async () => {
    const chains = Array.from({ length: 6 }, () => chain(randomUUID(), 1, 2));
    for (const c of chains) mock.addCustomer(c);
    const limitedBefore = mock.counts.limited;
    mock.rateLimitNext(3, 1000);
    const started = Date.now();
    const run = await importApple(writeTempFile('limited.csv', chains.map((c) => c[0].transactionId).join('\n')));
    expect(run.code).toBe(0);
    expect(mock.counts.limited - limitedBefore).toBe(3);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(run.stderr).toContain('imported 6 line(s)');
    mock.failNext(2);
    const again = chains.map(() => chain(randomUUID(), 1, 2));
    for (const c of again) mock.addCustomer(c);
    const run2 = await importApple(writeTempFile('failing.csv', again.map((c) => c[0].transactionId).join('\n')));
    expect(run2.code).toBe(0);
    expect(run2.stderr).toContain('imported 6 line(s)');
  });

  it('refuses with a message naming the setting or the line', async () => {
    const file = writeTempFile('one.csv', '1\n');
    const unknown = await runCli(['import', 'apple', '--app', 'nope', '--file', file], env);
    expect(unknown).toMatchObject({ code: 2 });
    expect(unknown.stderr).toContain('application "nope" is not in APPLE_APPS');
    const noKey = await runCli(['import', 'apple', '--app', 'app-nokey', '--file', file], env);
    expect(noKey).toMatchObject({ code: 2 });
    expect(noKey.stderr).toContain('app-nokey has no In-App Purchase key: add app-nokey:<issuerId>:<keyId>:<path to .p8> to APPLE_API_KEYS');
    const noFile = await runCli(['import', 'apple', '--app', 'app-1', '--file', '/nonexistent.csv'], env);
    expect(noFile).toMatchObject({ code: 2 });
    expect(noFile.stderr).toContain('--file /nonexistent.csv is not a readable file');
    // A directory is named as one, with what the option takes (it said only "not a readable file").
    const dir = path.dirname(file);
    const directory = await runCli(['import', 'apple', '--app', 'app-1', '--file', dir], env);
    expect({ code: directory.code, stderr: directory.stderr }).toEqual({
      code: 2,
      stderr: `error: import apple: --file ${dir} is not a readable file: it is a directory (expected a CSV file of transactionId[,applicationUsername] lines)\n`,
    });
    const badKey = await runCli(['import', 'apple', '--app', 'app-1', '--file', file], {
      ...env,
      APPLE_API_KEYS: `app-1:57246542-96fe-1a63-e053-0824d011072a:TEST123:${writeTempFile('bad.p8', 'not a key')}`,
    });
    expect(badKey.code).toBe(78);
    expect(badKey.stderr).toContain('APPLE_API_KEYS');
    expect(badKey.stderr).toContain('is not a readable In-App Purchase key');
    // A key the store does not accept: the run stops at once, naming the setting.
    const otherKey = writeTempFile(
      'other.p8',
      (await startAppleStoreMock({ ca, bundleId: BUNDLE }).then(async (m) => (await m.close(), m.privateKeyPem))) as string,
    );
    const c = chain(undefined, 1, 1);
    mock.addCustomer(c);
    const refused = await runCli(['import', 'apple', '--app', 'app-1', '--file', writeTempFile('k.csv', `${c[0].transactionId}\n`)], {
      ...env,
      APPLE_API_KEYS: `app-1:57246542-96fe-1a63-e053-0824d011072a:TEST123:${otherKey}`,
    });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('refused the In-App Purchase key of application app-1 (401)');
  });

  it('resumes after SIGKILL mid-import: every line imported once, none published twice into the read models', async () => {
    const chains = Array.from({ length: 400 }, () => chain(randomUUID(), 2, 4));
    for (const c of chains) mock.addCustomer(c);
    const file = writeTempFile('big.csv', chains.map((c) => c[0].transactionId).join('\n') + '\n');
    const child = spawn(process.execPath, [path.join(root, 'dist/cli.js'), 'import', 'apple', '--app', 'app-1', '--file', file], {
      env: serviceEnv({ ...env, IMPORT_CONCURRENCY: '1' }),
      cwd: root,
    });
    const exited = new Promise((resolve) => child.on('exit', resolve));
    const journaled = async () =>
      Number(
        (
          await db.dataSource.query(`SELECT count(*)::int AS n FROM public.import_journal WHERE kind = 'apple-transactions' AND line > 0 AND app_id = 'app-1'`)
        )[0].n,
      );
    const before = await journaled();
    await expectEventually(async () => expect(await journaled()).toBeGreaterThan(before + 10), 60_000, 20);
    child.kill('SIGKILL');
    await exited;
    const done = (await journaled()) - before;
    expect(done).toBeLessThan(400);

    const resumed = await importApple(file);
    expect(resumed.code).toBe(0);
    const m = /imported (\d+) line\(s\).*unchanged (\d+)/.exec(resumed.stderr)!;
    expect(Number(m[2])).toBe(done);
    expect(Number(m[1])).toBe(400 - done);
    await embeddedLogCaughtUp(db.dataSource);
    const rows = await transactions();
    for (const c of chains) for (const t of c) expect(rows.filter((r) => r.transactionId === `apple:${t.transactionId}`)).toHaveLength(1);
  });
});

describe('import apple-notifications (e2e): the outage', () => {
  it('recovers what was sent while the endpoint was down; what it received is not counted twice; a newer notification still wins', async () => {
    const user = randomUUID();
    const c = chain(user, 1, 20);
    const t0 = c[0];
    const since = new Date(Date.now() - 25 * DAY).toISOString();
    const n = (type: string, signedDate: number, t: MockTransaction, renewal: Record<string, unknown>, failed: boolean) => ({
      notificationType: type,
      notificationUUID: randomUUID(),
      signedDate,
      transaction: t,
      renewal: { originalTransactionId: t.originalTransactionId, productId: t.productId, ...renewal },
      failed,
    });
    // Received: the purchase. Missed (endpoint down): auto-renew off, then the renewal.
    const subscribed = n('SUBSCRIBED', t0.purchaseDate, t0, { autoRenewStatus: 1 }, false);
    const renewal: MockTransaction = {
      ...t0,
      transactionId: nextId(),
      purchaseDate: t0.purchaseDate + 10 * DAY,
      expiresDate: t0.purchaseDate + 40 * DAY,
      transactionReason: 'RENEWAL',
    };
    const missed = [
      n('DID_CHANGE_RENEWAL_STATUS', t0.purchaseDate + DAY, t0, { autoRenewStatus: 0 }, true),
      n('DID_RENEW', renewal.purchaseDate, renewal, { autoRenewStatus: 0 }, true),
    ];
    for (const x of [subscribed, ...missed]) mock.addNotification(x);
    const post = await fetch(`${api.baseUrl}/v2/notifications/apple/app-1`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ signedPayload: mock.signNotification(subscribed) }),
    });
    expect(post.status).toBe(200);
    await embeddedLogCaughtUp(db.dataSource);
    expect((await customer(user)).customerInfo).toMatchObject({ renewalIntent: 'Renew', expirationDate: new Date(t0.expiresDate as number).toISOString() });
    // distinct event ids published for the app: an import republishing a received notification reuses its ids
    const processed = async () =>
      Number(
        (
          await db.dataSource.query(
            `SELECT count(DISTINCT convert_from(value, 'UTF8')::json->>'id')::int AS n FROM public.event_log WHERE convert_from(value, 'UTF8')::json->>'appid' = 'app-1'`,
          )
        )[0].n,
      );

    const before = await processed();
    const run = await runCli(['import', 'apple-notifications', '--app', 'app-1', '--since', since], env);
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/imported 3 line\(s\)/);
    await embeddedLogCaughtUp(db.dataSource);
    // Three notifications, one link each: the two missed add 4 events; SUBSCRIBED's 2 were applied already.
    expect((await processed()) - before).toBe(4);
    expect((await customer(user)).customerInfo).toMatchObject({
      renewalIntent: 'Lapse',
      expirationDate: new Date(renewal.expiresDate as number).toISOString(),
      activeSubscriber: true,
    });

    // Again, and only the failures: nothing new.
    const again = await runCli(['import', 'apple-notifications', '--app', 'app-1', '--since', since, '--only-failures'], env);
    expect(again.code).toBe(0);
    await embeddedLogCaughtUp(db.dataSource);
    expect((await processed()) - before).toBe(4);

    // An older imported state does not win over a newer live notification, nor the other way round.
    const live = mock.signNotification(n('DID_CHANGE_RENEWAL_STATUS', Date.now() - 1000, renewal, { autoRenewStatus: 1 }, false));
    expect(
      (
        await fetch(`${api.baseUrl}/v2/notifications/apple/app-1`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ signedPayload: live }),
        })
      ).status,
    ).toBe(200);
    await runCli(['import', 'apple-notifications', '--app', 'app-1', '--since', since], env);
    await embeddedLogCaughtUp(db.dataSource);
    expect((await customer(user)).customerInfo).toMatchObject({ renewalIntent: 'Renew' });
  });
});

describe('import apple on Kafka (e2e: built CLI, loopback App Store mock, real broker)', () => {
  it('publishes the same events to the topic, and a second run publishes nothing', async () => {
    const topic = uniqueTopic('apple-import');
    await createTopic(topic, 3);
    const user = randomUUID();
    const renewed = chain(user, 2, 3);
    mock.addCustomer(renewed);
    const file = writeTempFile('kafka-customers.csv', `${renewed[0].transactionId}\n`);
    const kafkaEnv = { KAFKA_BROKERS: process.env.TEST_KAFKA_BROKERS!, KAFKA_TOPIC: topic };

    const first = await importApple(file, [], kafkaEnv);
    expect({ code: first.code, summary: first.stderr }).toEqual({ code: 0, summary: expect.stringContaining('imported 1 line(s)') });
    const end = await topicEndOffsets(topic);
    const messages = await readAll(topic, Number(end));
    const events = messages.map((m) => JSON.parse(m.value!.toString()) as { type: string; appid: string; data: { transactionId?: string; receiptId: string } });
    expect(events.every((e) => e.appid === 'app-1')).toBe(true);
    for (const t of renewed) expect(events.map((e) => e.data.transactionId)).toContain(`apple:${t.transactionId}`);
    expect(events.some((e) => e.type === 'receipt.linked')).toBe(true);

    const second = await importApple(file, [], kafkaEnv);
    expect(second.stderr).toContain('imported 0 line(s) (0 event(s)), unchanged 1');
    expect(await topicEndOffsets(topic)).toBe(end);
  });
});
