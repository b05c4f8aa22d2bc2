import { jest } from '@jest/globals';
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { freePort } from '../kafka/broker.mjs';
import { mintToken } from '../../src/auth/mint-token.js';
import { TEST_SECRET } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { linkEvent, project, txEvent } from '../utils/events.js';
import { expectEventually } from '../utils/expect-eventually.js';
import { startService, writeTempFile, type ServiceProcess } from '../utils/processes.js';
import { X509Certificate } from 'node:crypto';
import { createAppleTestCa, signAppleJws, type AppleTestCa } from '../../src/store-notifications/apple/apple-test-ca.js';

// The docs page as a person uses it, in a real browser (Debian's Chromium, driven by playwright-core):
// authorize, open each operation, "Try it out", "Execute" with the page's own pre-filled values.
// .ci/run installs Chromium and sets CHROMIUM_REQUIRED; elsewhere, without one (CHROMIUM_PATH or
// /usr/bin/chromium) this file says so and skips.
jest.setTimeout(120_000);

const executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const haveBrowser = existsSync(executablePath);
const required = process.env.CHROMIUM_REQUIRED === '1';
if (!haveBrowser && !required) console.log(`docs page browser test skipped: no Chromium at ${executablePath} (apt-get install chromium, or set CHROMIUM_PATH)`);
const describeWithBrowser = haveBrowser || required ? describe : describe.skip;

/** Three customers (alice, bob, carol) and four transactions. */
const SEEDED = [
  txEvent({
    time: '2026-01-15T10:00:00Z',
    data: {
      transactionId: 'apple:t-1',
      receiptId: 'apple:r-1',
      productId: 'apple:pro_monthly',
      purchaseDate: '2026-01-15T10:00:00Z',
      expirationDate: '2036-02-15T10:00:00Z',
    },
  }),
  linkEvent({ time: '2026-01-15T10:00:01Z', receiptId: 'apple:r-1', user: 'alice' }),
  txEvent({
    time: '2026-01-16T10:00:00Z',
    data: {
      transactionId: 'apple:t-2',
      receiptId: 'apple:r-2',
      productId: 'apple:basic_yearly',
      purchaseDate: '2026-01-16T10:00:00Z',
      expirationDate: '2026-02-16T10:00:00Z',
    },
  }),
  linkEvent({ time: '2026-01-16T10:00:01Z', receiptId: 'apple:r-2', user: 'bob' }),
  txEvent({
    time: '2026-01-17T10:00:00Z',
    data: {
      transactionId: 'google:GPA.1',
      receiptId: 'google:r-3',
      productId: 'google:pro_monthly',
      purchaseDate: '2026-01-17T10:00:00Z',
      expirationDate: '2036-02-17T10:00:00Z',
    },
  }),
  txEvent({
    time: '2026-01-18T10:00:00Z',
    data: {
      transactionId: 'google:GPA.2',
      receiptId: 'google:r-3',
      productId: 'google:pro_monthly',
      purchaseDate: '2026-01-18T10:00:00Z',
      expirationDate: '2036-02-18T10:00:00Z',
      sandbox: true,
    },
  }),
  linkEvent({ time: '2026-01-18T10:00:01Z', receiptId: 'google:r-3', user: 'carol' }),
];
const TOTALS: Record<string, number> = { '/v2/customers': 3, '/v2/transactions': 4 };
/** What Try it out may send untouched: the paging defaults, never a filter. */
const PAGING_DEFAULTS = new Set(['skip=0', 'limit=100']);

describeWithBrowser('the docs page in a real browser (e2e, built service)', () => {
  let db: TestDatabase;
  let service: ServiceProcess;
  let browser: Browser;
  let base: string;
  let ca: AppleTestCa;

  beforeAll(async () => {
    ca = await createAppleTestCa();
    db = await createTestDatabase('docs_page');
    // Customers and transactions of every kind, most of them outside what any documented example
    // selects (another product, expired, a google row), so a prefilled filter cannot go unnoticed.
    await project(db.dataSource, SEEDED);
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    service = startService({
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: db.url,
      CONSUMER_ENABLED: 'true',
      WEBHOOK_DELIVERY_ENABLED: 'false',
      APPLE_APPS: 'app-1:com.example.docs:Sandbox',
      APPLE_ROOT_CERTIFICATES: writeTempFile('docs-root.pem', new X509Certificate(ca.root).toString()),
    });
    await expectEventually(async () => expect((await fetch(`${base}/health/ready`)).status).toBe(200), 60_000, 250);
    browser = await chromium.launch({
      executablePath,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await service?.kill('SIGTERM');
    await db?.drop();
  });

  it.each([['/v2/customers'], ['/v2/transactions']])('GET %s works on the first click of Try it out and Execute', async (route) => {
    const page = await browser.newPage();
    try {
      await page.goto(`${base}/docs`);
      await page.locator('button.authorize').first().click();
      const bearer = page.locator('.modal-ux form').filter({ hasText: 'bearer (http, Bearer)' });
      await bearer
        .locator('input[type=text]')
        .fill(mintToken({ secret: TEST_SECRET, appId: 'app-1', scopes: ['customers:read', 'transactions:read'], ttlSeconds: 600 }));
      await bearer.locator('button.authorize').click();
      await page.locator('.modal-ux button.btn-done').first().click();
      const operation = page.locator('.opblock-get').filter({ has: page.locator(`.opblock-summary-path[data-path="${route}"]`) });
      await operation.locator('.opblock-summary').click();
      await operation.locator('.try-out__btn').click();
      // Execute with no field touched: what the page sends is what a newcomer's first click sends.
      const sent = page.waitForRequest((r) => new URL(r.url()).pathname === route);
      await operation.locator('button.execute').click();
      const query = new URL((await sent).url()).search.replace(/^\?/, '');
      const response = operation.locator('.live-responses-table tr.response');
      const status = await response.locator('td.response-col_status').textContent();
      const body = await response.locator('.response-col_description pre').first().textContent();
      expect({ status: status?.trim(), body }).toEqual({ status: '200', body: expect.stringContaining('"rows"') });
      // No filter went out (only paging defaults may), and the page shows the same URL it sent.
      expect(query.split('&').filter((pair) => pair !== '' && !PAGING_DEFAULTS.has(pair))).toEqual([]);
      const shownUrl = await operation.locator('.request-url pre').first().textContent();
      expect(new URL(shownUrl?.trim() ?? '').search.replace(/^\?/, '')).toBe(query);
      // The unfiltered listing: everything seeded.
      expect(JSON.parse(body ?? '')).toMatchObject({ rows: expect.any(Array), paging: { skip: 0, total: TOTALS[route] } });
    } finally {
      await page.close();
    }
  });

  // Runs after the listings: it adds a customer.
  it("POST /v2/purchases: Try it out with a pasted StoreKit 2 transaction records it for the token's user", async () => {
    const page = await browser.newPage();
    try {
      await page.goto(`${base}/docs`);
      await page.locator('button.authorize').first().click();
      const bearer = page.locator('.modal-ux form').filter({ hasText: 'bearer (http, Bearer)' });
      await bearer
        .locator('input[type=text]')
        .fill(mintToken({ secret: TEST_SECRET, appId: 'app-1', scopes: ['purchases:write'], ttlSeconds: 600, username: 'dora@example.com' }));
      await bearer.locator('button.authorize').click();
      await page.locator('.modal-ux button.btn-done').first().click();
      const operation = page.locator('.opblock-post').filter({ has: page.locator('.opblock-summary-path[data-path="/v2/purchases"]') });
      await operation.locator('.opblock-summary').click();
      await operation.locator('.try-out__btn').click();
      const now = Date.now();
      const jws = signAppleJws(ca, {
        transactionId: '2000000999',
        originalTransactionId: '2000000999',
        bundleId: 'com.example.docs',
        productId: 'pro_monthly',
        purchaseDate: now - 60_000,
        originalPurchaseDate: now - 60_000,
        expiresDate: now + 30 * 86_400_000,
        type: 'Auto-Renewable Subscription',
        inAppOwnershipType: 'PURCHASED',
        quantity: 1,
        signedDate: now,
        environment: 'Sandbox',
      });
      await operation.locator('textarea.body-param__text').fill(JSON.stringify({ signedTransaction: jws }));
      await operation.locator('button.execute').click();
      const response = operation.locator('.live-responses-table tr.response');
      const status = await response.locator('td.response-col_status').textContent();
      const body = JSON.parse((await response.locator('.response-col_description pre').first().textContent()) ?? '');
      expect({ status: status?.trim(), body }).toMatchObject({
        status: '200',
        body: {
          status: 'recorded',
          customer: { applicationUsername: 'dora@example.com', receiptIds: ['apple:2000000999'], customerInfo: { activeSubscriber: true } },
        },
      });
    } finally {
      await page.close();
    }
  });
});
