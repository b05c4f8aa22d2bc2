import { jest } from '@jest/globals';
import { spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAppleTestCa } from '../../src/store-notifications/apple/apple-test-ca.js';
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

let mock: AppleStoreMock;
let db: TestDatabase;
let api: TestApp;
let env: Record<string, string>;

beforeAll(async () => {
  const ca = await createAppleTestCa();
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
  api = await startTestApp({ databaseUrl: db.url, env: { CONSUMER_ENABLED: 'true', APPLE_ROOT_CERTIFICATES: rootFile, APPLE_APPS: `app-1:${BUNDLE}:Sandbox` } });
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
    const transaction = { transactionId: id, originalTransactionId: id, productId: 'pro_monthly', purchaseDate: signedDate - 1000, originalPurchaseDate: signedDate - 1000, expiresDate: signedDate + 30 * DAY, type: 'Auto-Renewable Subscription', quantity: 1, inAppOwnershipType: 'PURCHASED', price: 4990, currency: 'USD' };
    mock.addNotification({ notificationType: 'SUBSCRIBED', subtype: 'INITIAL_BUY', notificationUUID: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, signedDate, transaction, renewal: { originalTransactionId: id, productId: 'pro_monthly', autoRenewStatus: 1 }, failed: true });
  }
  const since = new Date(first - DAY).toISOString();
  const checkpoint = async () => (await db.dataSource.query(`SELECT checkpoint FROM public.import_checkpoint WHERE app_id = 'app-1' AND kind = 'apple-notifications'`))[0]?.checkpoint as string | undefined;
  const journaled = async () => Number((await db.dataSource.query(`SELECT count(*)::int AS n FROM public.import_journal WHERE app_id = 'app-1' AND kind = 'apple-notifications'`))[0].n);

  const child = spawn(process.execPath, [path.join(root, 'dist/cli.js'), 'import', 'apple-notifications', '--app', 'app-1', '--since', since], { env: serviceEnv({ ...env, IMPORT_CONCURRENCY: '1' }), cwd: root, stdio: 'ignore' });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  await expectEventually(async () => expect(await checkpoint()).toBeDefined(), 60_000, 10);
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
