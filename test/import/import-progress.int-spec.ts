import { jest } from '@jest/globals';
import { spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAppleTestCa } from '../../src/store-notifications/apple/apple-test-ca.js';
import { startAppleStoreMock, type AppleStoreMock } from '../utils/apple-store-mock.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { expectEventually } from '../utils/expect-eventually.js';
import { serviceEnv, writeTempFile } from '../utils/processes.js';

jest.setTimeout(120_000);

// docs/import.md: progress goes to stderr as "a line every 5 s on a pipe". Lines were written only
// when a line of the source was started, so an import waiting for the store (the first page of the
// notification history, or slow answers with every worker busy) said nothing: 48 s on a real run.
// Here the store answers only after 9 s; a progress line must come within 6 s of the request.
const BUNDLE = 'com.example.progress';
const DAY = 86_400_000;
const SLOW_MS = 9_000;
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const PROGRESS = (kind: string) => new RegExp(`^\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z ${kind}: \\d+ lines`, 'm');

let mock: AppleStoreMock;
let db: TestDatabase;
let env: Record<string, string>;

beforeAll(async () => {
  const ca = await createAppleTestCa();
  mock = await startAppleStoreMock({ ca, bundleId: BUNDLE });
  db = await createTestDatabase('importprogress');
  env = {
    DATABASE_URL: db.url,
    APPLE_ROOT_CERTIFICATES: writeTempFile('apple-root.pem', new X509Certificate(ca.root).toString()),
    APPLE_APPS: `app-1:${BUNDLE}:Sandbox`,
    APPLE_API_KEYS: `app-1:57246542-96fe-1a63-e053-0824d011072a:TEST123:${writeTempFile('SubscriptionKey_TEST123.p8', mock.privateKeyPem)}`,
    APPLE_API_BASE_URL: mock.base,
  };
  const id = '7000001';
  const purchaseDate = Date.now() - 2 * DAY;
  mock.addCustomer([
    {
      transactionId: id,
      originalTransactionId: id,
      productId: 'pro_monthly',
      purchaseDate,
      originalPurchaseDate: purchaseDate,
      expiresDate: purchaseDate + 30 * DAY,
      type: 'Auto-Renewable Subscription',
      quantity: 1,
      inAppOwnershipType: 'PURCHASED',
      price: 4990,
      currency: 'USD',
    },
  ]);
  mock.addNotification({
    notificationType: 'SUBSCRIBED',
    subtype: 'INITIAL_BUY',
    notificationUUID: '00000000-0000-4000-a000-000000000001',
    signedDate: purchaseDate,
    transaction: {
      transactionId: id,
      originalTransactionId: id,
      productId: 'pro_monthly',
      purchaseDate,
      originalPurchaseDate: purchaseDate,
      expiresDate: purchaseDate + 30 * DAY,
      type: 'Auto-Renewable Subscription',
      quantity: 1,
      inAppOwnershipType: 'PURCHASED',
      price: 4990,
      currency: 'USD',
    },
  });
  mock.slowDown(SLOW_MS);
});
afterAll(async () => {
  await db?.drop();
  await mock?.close();
});

/** Runs the CLI with stderr on a pipe; resolves when it ends, with the ms from the store's receiving its first request to a line matching `line`. */
async function progressWhileWaiting(args: string[], requests: () => number, line: RegExp) {
  const child = spawn(process.execPath, [path.join(root, 'dist/cli.js'), ...args], { env: serviceEnv(env), cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let progressAt: number | undefined;
  child.stdout!.resume();
  child.stderr!.on('data', (d) => {
    stderr += d;
    if (progressAt === undefined && line.test(stderr)) progressAt = Date.now();
  });
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  const before = requests();
  await expectEventually(async () => expect(requests()).toBeGreaterThan(before), 30_000, 10);
  const asked = Date.now();
  await expectEventually(async () => expect(progressAt ?? stderr).toEqual(expect.any(Number)), SLOW_MS, 50);
  const code = await exited;
  return { waitedMs: progressAt! - asked, code, stderr };
}

it('import apple-notifications: a progress line while the first page is awaited', async () => {
  const r = await progressWhileWaiting(
    ['import', 'apple-notifications', '--app', 'app-1', '--since', new Date(Date.now() - 5 * DAY).toISOString()],
    () => mock.received.filter((r) => r.path === '/inApps/v1/notifications/history').length,
    PROGRESS('apple-notifications'),
  );
  expect(r.waitedMs).toBeLessThan(6_000);
  expect(r.code).toBe(0);
  expect(r.stderr).toMatch(/imported 1 line\(s\)/);
});

it('import apple: a progress line while every worker waits for the store', async () => {
  const file = writeTempFile('customers.csv', '7000001\n');
  const r = await progressWhileWaiting(
    ['import', 'apple', '--app', 'app-1', '--file', file],
    () => mock.received.filter((r) => r.path.startsWith('/inApps/v2/history/')).length,
    PROGRESS('apple-transactions'),
  );
  expect(r.waitedMs).toBeLessThan(6_000);
  expect(r.code).toBe(0);
  expect(r.stderr).toMatch(/imported 1 line\(s\)/);
});
