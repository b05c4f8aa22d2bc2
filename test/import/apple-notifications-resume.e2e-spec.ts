import { jest } from '@jest/globals';
import { spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAppleTestCa, type AppleTestCa } from '../../src/store-notifications/apple/apple-test-ca.js';
import { startAppleStoreMock, type AppleStoreMock } from '../utils/apple-store-mock.js';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { embeddedLogCaughtUp } from '../utils/events.js';
import { expectEventually } from '../utils/expect-eventually.js';
import { runCli, serviceEnv, writeTempFile } from '../utils/processes.js';

jest.setTimeout(120_000);

// `import apple-notifications` keeps its place in Get Notification History (public.import_checkpoint):
// killed mid-run, the next run asks Apple only for the pages from the last checkpoint on, and every
// notification still ends up published once.
const BUNDLE = 'com.example.resume';
const DAY = 86_400_000;
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const N = 1000; // 50 pages of 20
const PAGE = 20;

let ca: AppleTestCa;
let mock: AppleStoreMock;
let db: TestDatabase;
let api: TestApp;
let env: Record<string, string>;

beforeAll(async () => {
  ca = await createAppleTestCa();
  mock = await startAppleStoreMock({ ca, bundleId: BUNDLE });
  db = await createTestDatabase('applenotifresume');
  const rootFile = writeTempFile('apple-root.pem', new X509Certificate(ca.root).toString());
  env = {
    DATABASE_URL: db.url,
    APPLE_ROOT_CERTIFICATES: rootFile,
    APPLE_APPS: `app-1:${BUNDLE}:Sandbox`,
    APPLE_API_KEYS: `app-1:57246542-96fe-1a63-e053-0824d011072a:TEST123:${writeTempFile('SubscriptionKey_TEST123.p8', mock.privateKeyPem)}`,
    APPLE_API_BASE_URL: mock.base,
  };
  api = await startTestApp({
    databaseUrl: db.url,
    env: { CONSUMER_ENABLED: 'true', APPLE_ROOT_CERTIFICATES: rootFile, APPLE_APPS: `app-1:${BUNDLE}:Sandbox` },
  });
});
afterAll(async () => {
  await api?.close();
  await db?.drop();
  await mock?.close();
});

it('resumes Get Notification History from the last checkpoint after SIGKILL: fewer pages asked, every notification published once', async () => {
  const first = Date.now() - 10 * DAY;
  for (let i = 0; i < N; i++) {
    const id = String(5_000_000 + i);
    const signedDate = first + i * 60_000;
    const transaction = {
      transactionId: id,
      originalTransactionId: id,
      productId: 'pro_monthly',
      purchaseDate: signedDate - 1000,
      originalPurchaseDate: signedDate - 1000,
      expiresDate: signedDate + 30 * DAY,
      type: 'Auto-Renewable Subscription',
      quantity: 1,
      inAppOwnershipType: 'PURCHASED',
      price: 4990,
      currency: 'USD',
    };
    mock.addNotification({
      notificationType: 'SUBSCRIBED',
      subtype: 'INITIAL_BUY',
      notificationUUID: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      signedDate,
      transaction,
      renewal: { originalTransactionId: id, productId: 'pro_monthly', autoRenewStatus: 1 },
      failed: true,
    });
  }
  const since = new Date(first - DAY).toISOString();
  const checkpoint = async () =>
    (await db.dataSource.query(`SELECT checkpoint FROM public.import_checkpoint WHERE app_id = 'app-1' AND kind = 'apple-notifications'`))[0]?.checkpoint as
      string | undefined;
  const journaled = async () =>
    Number((await db.dataSource.query(`SELECT count(*)::int AS n FROM public.import_journal WHERE app_id = 'app-1' AND kind = 'apple-notifications'`))[0].n);

  const child = spawn(process.execPath, [path.join(root, 'dist/cli.js'), 'import', 'apple-notifications', '--app', 'app-1', '--since', since], {
    env: serviceEnv({ ...env, IMPORT_CONCURRENCY: '1' }),
    cwd: root,
    stdio: 'ignore',
  });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  await expectEventually(async () => expect(await checkpoint()).toEqual(expect.any(String)), 60_000, 10);
  child.kill('SIGKILL');
  await exited;
  const saved = JSON.parse((await checkpoint())!) as { line: number; paginationToken: string };
  const done = await journaled();
  expect(saved.line % PAGE).toBe(0);
  expect(saved.line).toBeLessThanOrEqual(done);
  expect(done).toBeLessThan(N);

  const pagesBefore = mock.counts.notifications;
  const second = await runCli(['import', 'apple-notifications', '--app', 'app-1', '--since', since], env);
  expect(second.code).toBe(0);
  // The pages after the checkpoint, then one for the rest of this run's window (nothing there).
  expect(mock.counts.notifications - pagesBefore).toBe((N - saved.line) / PAGE + 1);
  const m = /imported (\d+) line\(s\).*unchanged (\d+)/.exec(second.stderr)!;
  expect({ imported: Number(m[1]), unchanged: Number(m[2]) }).toEqual({ imported: N - done, unchanged: done - saved.line });
  await embeddedLogCaughtUp(db.dataSource);
  const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM read_model.transactions WHERE app_id = 'app-1'`);
  expect(n).toBe(N);
});

// Lines were collected 256 at a time before any was published or recorded, so a window of fewer
// notifications saved no token at all and the run after a SIGKILL asked every page again. Each
// page's notifications are now published and recorded before the next page is asked for, and
// that page's paginationToken saved: killed while the 5th of 5 pages (33 notifications, 7 a page)
// is on its way, the next run asks for that page alone.
it('after a SIGKILL during the 5th of 5 pages, the next run asks for the 5th page only; each notification published once', async () => {
  const bundle = 'com.example.resume5';
  const small = await startAppleStoreMock({ ca, bundleId: bundle, notificationPageSize: 7 });
  try {
    const TOTAL = 33;
    const first = Date.now() - 5 * DAY;
    for (let i = 0; i < TOTAL; i++) {
      const id = String(6_000_000 + i);
      const signedDate = first + i * 60_000;
      const transaction = {
        transactionId: id,
        originalTransactionId: id,
        productId: 'pro_monthly',
        purchaseDate: signedDate - 1000,
        originalPurchaseDate: signedDate - 1000,
        expiresDate: signedDate + 30 * DAY,
        type: 'Auto-Renewable Subscription',
        quantity: 1,
        inAppOwnershipType: 'PURCHASED',
        price: 4990,
        currency: 'USD',
      };
      small.addNotification({
        notificationType: 'SUBSCRIBED',
        subtype: 'INITIAL_BUY',
        notificationUUID: `00000000-0000-4000-9000-${String(i).padStart(12, '0')}`,
        signedDate,
        transaction,
        renewal: { originalTransactionId: id, productId: 'pro_monthly', autoRenewStatus: 1 },
      });
    }
    const cliEnv = {
      DATABASE_URL: db.url,
      APPLE_ROOT_CERTIFICATES: env.APPLE_ROOT_CERTIFICATES,
      APPLE_APPS: `app-5:${bundle}:Sandbox`,
      APPLE_API_KEYS: `app-5:57246542-96fe-1a63-e053-0824d011072a:TEST5:${writeTempFile('SubscriptionKey_TEST5.p8', small.privateKeyPem)}`,
      APPLE_API_BASE_URL: small.base,
    };
    // --until: the same window (and checkpoint) for both runs, and no request for a later rest of it.
    const args = [
      'import',
      'apple-notifications',
      '--app',
      'app-5',
      '--since',
      new Date(first - DAY).toISOString(),
      '--until',
      new Date(first + DAY).toISOString(),
    ];
    // The events the window stands for, as a dry run prints them.
    const dry = await runCli([...args, '--dry-run'], cliEnv);
    expect(dry.code).toBe(0);
    const ids = dry.stdout
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { id: string }).id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(small.notificationTokens).toEqual([null, '7', '14', '21', '28']);
    small.notificationTokens.length = 0;

    // The 5th page hangs until the run is killed.
    small.slowDown(600_000, (r) => r.paginationToken === '28');
    const child = spawn(process.execPath, [path.join(root, 'dist/cli.js'), ...args], { env: serviceEnv(cliEnv), cwd: root, stdio: 'ignore' });
    const exited = new Promise((resolve) => child.on('exit', resolve));
    await expectEventually(async () => expect(small.notificationTokens).toContain('28'), 60_000, 10);
    child.kill('SIGKILL');
    await exited;
    small.slowDown(0);
    const saved = (await db.dataSource.query(`SELECT checkpoint FROM public.import_checkpoint WHERE app_id = 'app-5' AND kind = 'apple-notifications'`)) as {
      checkpoint: string;
    }[];
    expect(saved.map((r) => JSON.parse(r.checkpoint) as { line: number; paginationToken: string })).toEqual([
      expect.objectContaining({ line: 28, paginationToken: '28' }),
    ]);
    const journaled = async () =>
      Number((await db.dataSource.query(`SELECT count(*)::int AS n FROM public.import_journal WHERE app_id = 'app-5' AND kind = 'apple-notifications'`))[0].n);
    expect(await journaled()).toBe(28);

    small.notificationTokens.length = 0;
    const second = await runCli(args, cliEnv);
    expect(second.code).toBe(0);
    expect(small.notificationTokens).toEqual(['28']);
    expect(second.stderr).toMatch(/imported 5 line\(s\) \(\d+ event\(s\)\), unchanged 0 .*skipped 0, failed 0/);
    expect(await journaled()).toBe(TOTAL);
    const logged = (await db.dataSource.query(
      `SELECT convert_from(value, 'UTF8')::json->>'id' AS id FROM public.event_log WHERE convert_from(value, 'UTF8')::json->>'appid' = 'app-5'`,
    )) as { id: string }[];
    expect(logged.map((r) => r.id).sort()).toEqual([...ids].sort());
    await embeddedLogCaughtUp(db.dataSource);
    const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM read_model.transactions WHERE app_id = 'app-5'`);
    expect(n).toBe(TOTAL);
  } finally {
    await small.close();
  }
});
