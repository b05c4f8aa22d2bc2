import { jest } from '@jest/globals';
import { spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import path from 'node:path';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { embeddedLogCaughtUp } from '../utils/events.js';
import { expectEventually } from '../utils/expect-eventually.js';
import { startGooglePlayMock } from '../utils/google-play-mock.js';
import { runCli, serviceEnv, writeTempFile } from '../utils/processes.js';

jest.setTimeout(180_000);

const PACKAGE = 'com.example.imports';
const DAY = 86_400_000;
const at = (offsetMs: number) => new Date(Date.now() + offsetMs).toISOString();
type Row = Record<string, unknown>;

/** A SubscriptionPurchaseV2 as purchases.subscriptionsv2.get documents it. */
function subscription(o: { order: string; user?: string; linked?: string; expires?: string; state?: string }) {
  return {
    kind: 'androidpublisher#subscriptionPurchaseV2',
    regionCode: 'DE',
    startTime: at(-40 * DAY),
    subscriptionState: o.state ?? 'SUBSCRIPTION_STATE_ACTIVE',
    latestOrderId: o.order,
    acknowledgementState: 'ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED',
    ...(o.user ? { externalAccountIdentifiers: { obfuscatedExternalAccountId: o.user } } : {}),
    ...(o.linked ? { linkedPurchaseToken: o.linked } : {}),
    lineItems: [
      {
        productId: 'pro_monthly',
        expiryTime: o.expires ?? at(20 * DAY),
        autoRenewingPlan: { autoRenewEnabled: true, recurringPrice: { currencyCode: 'EUR', units: '4', nanos: 990000000 } },
        offerDetails: { basePlanId: 'monthly', offerTags: [] },
        latestSuccessfulOrderId: o.order,
      },
    ],
  };
}

/** A ProductPurchase as purchases.products.get documents it. */
const product = (order: string) => ({
  kind: 'androidpublisher#productPurchase',
  purchaseTimeMillis: String(Date.now() - 3 * DAY),
  purchaseState: 0,
  consumptionState: 1,
  orderId: order,
  purchaseType: 0,
  acknowledgementState: 1,
  regionCode: 'DE',
  quantity: 1,
});

describe('import google / google-voided (e2e: CLI processes, real PostgreSQL, embedded log, Play Developer API on loopback)', () => {
  let db: TestDatabase;
  let app: TestApp;
  let google: Awaited<ReturnType<typeof startGooglePlayMock>>;
  let env: Record<string, string>;

  beforeAll(async () => {
    google = await startGooglePlayMock();
    db = await createTestDatabase('gimport');
    env = {
      DATABASE_URL: db.url,
      GOOGLE_APPS: `app-g:${PACKAGE}`,
      GOOGLE_PUBSUB_AUDIENCE: 'https://records.example.com/v2/notifications/google/app-g',
      GOOGLE_SERVICE_ACCOUNT_FILE: writeTempFile('play-key.json', google.serviceAccountKey),
      GOOGLE_API_BASE_URL: google.base,
      GOOGLE_API_SELF_SIGNED_JWT: 'true',
    };
    // The running service projects what the imports publish to the embedded log.
    app = await startTestApp({ databaseUrl: db.url, env: { CONSUMER_ENABLED: 'true' } });
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
    await google?.close();
  });

  const tx = async (id: string) => ((await app.get('/v2/transactions?limit=1000', app.token('app-g'))).body.rows as Row[]).find((t) => t.transactionId === id);
  const logSize = async () => Number((await db.dataSource.query(`SELECT count(*)::int AS n FROM public.event_log`))[0].n);
  const importFile = (lines: string[], extra: Record<string, string> = {}, args: string[] = []) =>
    runCli(['import', 'google', '--app', 'app-g', '--file', writeTempFile('tokens.csv', lines.join('\n') + '\n'), ...args], { ...env, ...extra });

  it('imports subscriptions (back through linkedPurchaseToken), one-time products and usernames; skips tokens Google forgot; a second run changes nothing', async () => {
    const id = randomUUID().slice(0, 8);
    const [a, b, c, one, gone, lost] = ['a', 'b', 'c', 'one', 'gone', 'lost'].map((t) => `${t}-${id}`);
    // c upgraded b, which upgraded a: the chain is followed back and both older ones are marked upgraded.
    google.setSubscription(PACKAGE, a, subscription({ order: `GPA.${id}-A` }));
    google.setSubscription(PACKAGE, b, subscription({ order: `GPA.${id}-B`, linked: a }));
    google.setSubscription(PACKAGE, c, subscription({ order: `GPA.${id}-C`, linked: b, user: `u-${id}` }));
    google.setProduct(PACKAGE, 'coins_100', one, product(`GPA.${id}-P`));
    google.forget(PACKAGE, gone, 410);
    google.forget(PACKAGE, lost, 404);

    const lines = [c, `${one},coins_100,buyer-${id}`, '', gone, lost];
    const first = await importFile(lines);
    expect(first.stderr).toMatch(/line 4: skipped: Google does not know this subscription purchase \(HTTP 410/);
    expect(first.stderr).toMatch(/line 5: skipped: .*HTTP 404/);
    expect(first.stderr).toMatch(/imported 2 line\(s\) \(\d+ event\(s\)\), unchanged 0 .*skipped 2, failed 0/);
    expect(first.code).toBe(0);
    await embeddedLogCaughtUp(db.dataSource);
    expect(await tx(`google:GPA.${id}-C`)).toMatchObject({
      receiptId: `google:${c}`,
      productId: 'google:pro_monthly',
      amountMicros: 4990000,
      provenance: { kind: 'import', source: 'google-play-developer-api' },
    });
    expect(await tx(`google:GPA.${id}-C`)).not.toHaveProperty('isUpgraded', true);
    expect(await tx(`google:GPA.${id}-B`)).toMatchObject({ receiptId: `google:${b}`, isUpgraded: true, cancelationReason: 'System.Replaced' });
    expect(await tx(`google:GPA.${id}-A`)).toMatchObject({ receiptId: `google:${a}`, isUpgraded: true });
    expect(await tx(`google:GPA.${id}-P`)).toMatchObject({ receiptId: `google:${one}`, productId: 'google:coins_100', isConsumed: true });
    const buyer = (await app.get(`/v2/customers?applicationUsername=buyer-${id}`, app.token('app-g'))).body.rows[0];
    expect(buyer.receiptIds).toEqual([`google:${one}`]);

    // Same file again: every line is done (journal), Google is not asked, nothing is published.
    const [events, calls] = [await logSize(), google.calls.length];
    const again = await importFile(lines);
    expect(again.code).toBe(0);
    expect(again.stderr).toMatch(/imported 0 line\(s\) \(0 event\(s\)\), unchanged 4/);
    expect(google.calls.length).toBe(calls);
    expect(await logSize()).toBe(events);

    // Another file naming the same purchases: fetched again, the same state is a newer snapshot of
    // the same data (every event counts since event-id claims went, issue 26): the rows, as listed,
    // and their change positions stay as they were, so no feed client or webhook sees a change.
    const state = async () => ({
      rows: (await app.get('/v2/transactions?limit=1000', app.token('app-g'))).body.rows,
      positions: await db.dataSource.query(
        `SELECT transaction_id, change_position::text FROM read_model.transactions WHERE transaction_id LIKE $1 ORDER BY 1`,
        [`google:GPA.${id}-%`],
      ),
    });
    const before = await state();
    const other = await importFile([`${one},coins_100,buyer-${id}`, c]);
    expect(other.code).toBe(0);
    await embeddedLogCaughtUp(db.dataSource);
    expect(await state()).toEqual(before);

    // Google's state moved on (a renewal): the new order is imported and wins, being fetched later.
    google.setSubscription(PACKAGE, c, subscription({ order: `GPA.${id}-C..0`, linked: b, user: `u-${id}`, expires: at(50 * DAY) }));
    const renewed = await importFile([c, `${one},coins_100,buyer-${id}`]);
    expect(renewed.code).toBe(0);
    await embeddedLogCaughtUp(db.dataSource);
    expect(await tx(`google:GPA.${id}-C..0`)).toMatchObject({ purchaseId: `google:GPA.${id}-C` });
  });

  it('--dry-run prints the events and publishes nothing', async () => {
    const id = randomUUID().slice(0, 8);
    google.setSubscription(PACKAGE, `dry-${id}`, subscription({ order: `GPA.${id}-D` }));
    const events = await logSize();
    const dry = await importFile([`dry-${id}`], {}, ['--dry-run']);
    expect(dry.code).toBe(0);
    const printed = dry.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(printed).toEqual([
      expect.objectContaining({ type: 'transaction.updated', appid: 'app-g', data: expect.objectContaining({ transactionId: `google:GPA.${id}-D` }) }),
    ]);
    expect(dry.stderr).toMatch(/dry run: would import 1 line/);
    expect(await logSize()).toBe(events);
  });

  it('waits out 429 with Retry-After and then imports', async () => {
    const id = randomUUID().slice(0, 8);
    google.setSubscription(PACKAGE, `rl-${id}`, subscription({ order: `GPA.${id}-R` }));
    const before = google.count(/subscriptionsv2\/tokens\/rl-/);
    google.rateLimitNextCalls(2, '1');
    const started = Date.now();
    const res = await importFile([`rl-${id}`]);
    expect(res.code).toBe(0);
    expect(res.stderr).toMatch(/imported 1 line/);
    // two 429s of Retry-After: 1 s each, then the answer
    expect(Date.now() - started).toBeGreaterThanOrEqual(2000);
    expect(google.count(/subscriptionsv2\/tokens\/rl-/) - before).toBe(3);
  });

  it('refusals name the line or the setting', async () => {
    const bad = await importFile(['has spaces in it', 'a,b,c,d', `ok-${randomUUID()}`, 'tok,Not A Product!']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/line 1: failed: the purchase token is not a Google purchase token/);
    expect(bad.stderr).toMatch(/line 2: failed: expected purchaseToken\[,productId\]\[,applicationUsername\], found 4 fields/);
    expect(bad.stderr).toMatch(/line 3: skipped: Google does not know/);
    expect(bad.stderr).toMatch(/line 4: failed: "Not A Product!" is not a Play product id/);

    const unknownApp = await runCli(['import', 'google', '--app', 'nope', '--file', writeTempFile('t.csv', 'x\n')], env);
    expect(unknownApp).toMatchObject({ code: 2, stderr: expect.stringMatching(/application "nope" is not in GOOGLE_APPS/) });
    const noFile = await runCli(['import', 'google', '--app', 'app-g'], env);
    expect(noFile).toMatchObject({ code: 2, stderr: expect.stringMatching(/needs --file/) });
    const missing = await runCli(['import', 'google', '--app', 'app-g', '--file', '/nonexistent/tokens.csv'], env);
    expect(missing).toMatchObject({ code: 2, stderr: expect.stringMatching(/--file \/nonexistent\/tokens.csv is not a readable file/) });
    // A directory is named as one, with what the option takes (it said only "not a readable file").
    const dir = path.dirname(writeTempFile('t.csv', 'x\n'));
    const directory = await runCli(['import', 'google', '--app', 'app-g', '--file', dir], env);
    expect({ code: directory.code, stderr: directory.stderr }).toEqual({
      code: 2,
      stderr: `error: import google: --file ${dir} is not a readable file: it is a directory (expected a CSV file of purchaseToken[,productId][,applicationUsername] lines)\n`,
    });
    const noGoogle = await runCli(['import', 'google', '--app', 'app-g', '--file', writeTempFile('t.csv', 'x\n')], { DATABASE_URL: db.url });
    expect(noGoogle).toMatchObject({ code: 2, stderr: expect.stringMatching(/set GOOGLE_APPS/) });
    const noKey = await runCli(['import', 'google', '--app', 'app-g', '--file', writeTempFile('t.csv', 'x\n')], {
      ...env,
      GOOGLE_SERVICE_ACCOUNT_FILE: '/nonexistent/key.json',
    });
    expect(noKey.code).toBe(78);
    expect(noKey.stderr).toMatch(/GOOGLE_SERVICE_ACCOUNT_FILE/);
    // A key Google does not accept (another account's): the run stops at once, naming the setting.
    const otherKey = await startGooglePlayMock();
    try {
      const refused = await importFile([`x-${randomUUID()}`, `y-${randomUUID()}`], {
        GOOGLE_SERVICE_ACCOUNT_FILE: writeTempFile('other.json', otherKey.serviceAccountKey),
      });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/stopped: the Play Developer API answered HTTP 401.*GOOGLE_SERVICE_ACCOUNT_FILE/);
    } finally {
      await otherKey.close();
    }
    const since = await runCli(['import', 'google-voided', '--app', 'app-g', '--since', at(-40 * DAY)], env);
    expect(since).toMatchObject({ code: 2, stderr: expect.stringMatching(/more than 30 days ago/) });
  });

  it('resumes after SIGKILL mid-import: the second run asks Google only for what the first did not finish', async () => {
    const id = randomUUID().slice(0, 8);
    const tokens = Array.from({ length: 30 }, (_, i) => `k${i}-${id}`);
    tokens.forEach((t, i) => google.setSubscription(PACKAGE, t, subscription({ order: `GPA.${id}-K${i}` })));
    const file = writeTempFile('tokens.csv', tokens.join('\n') + '\n');
    google.setDelay(150);
    try {
      const child = spawn(process.execPath, [path.resolve('dist/cli.js'), 'import', 'google', '--app', 'app-g', '--file', file], {
        env: serviceEnv({ ...env, IMPORT_CONCURRENCY: '2' }),
        stdio: 'ignore',
      });
      const exited = new Promise((resolve) => child.on('exit', resolve));
      const digest = createHash('sha256')
        .update(tokens.join('\n') + '\n')
        .digest('hex');
      const done = async () =>
        Number(
          (
            await db.dataSource.query(
              `SELECT count(*)::int AS n FROM public.import_journal WHERE app_id = 'app-g' AND kind = 'google-purchases' AND source_digest = $1`,
              [digest],
            )
          )[0].n,
        );
      const base = google.count(new RegExp(`tokens/k\\d+-${id}`));
      await expectEventually(async () => expect(await done()).toBeGreaterThanOrEqual(4), 30_000);
      child.kill('SIGKILL');
      await exited;
      const askedFirst = google.count(new RegExp(`tokens/k\\d+-${id}`)) - base;
      expect(askedFirst).toBeLessThan(30);
      const second = await runCli(['import', 'google', '--app', 'app-g', '--file', file], env);
      expect(second.code).toBe(0);
      const unchanged = Number(/unchanged (\d+)/.exec(second.stderr)?.[1]);
      expect(unchanged).toBeGreaterThanOrEqual(4);
      expect(second.stderr).toMatch(new RegExp(`imported ${30 - unchanged} line`));
      // Lines in flight at the kill may be asked twice; the rest are not asked again.
      expect(google.count(new RegExp(`tokens/k\\d+-${id}`)) - base).toBeLessThanOrEqual(30 + 2 * 2);
    } finally {
      google.setDelay(0);
    }
    await embeddedLogCaughtUp(db.dataSource);
    const rows = await db.dataSource.query(`SELECT count(*)::int AS n FROM read_model.transactions WHERE app_id = 'app-g' AND transaction_id LIKE $1`, [
      `google:GPA.${id}-K%`,
    ]);
    expect(rows[0].n).toBe(30);
  });

  it('import google-voided revokes refunded orders (after the snapshot it revokes), skips orders it does not hold, and changes nothing run twice', async () => {
    const id = randomUUID().slice(0, 8);
    const tokens = Array.from({ length: 3 }, (_, i) => `v${i}-${id}`);
    tokens.forEach((t, i) => google.setSubscription(PACKAGE, t, subscription({ order: `GPA.${id}-V${i}` })));
    expect((await importFile(tokens)).code).toBe(0);
    await embeddedLogCaughtUp(db.dataSource);
    const voidedAt = Date.now() - 2 * DAY;
    tokens.forEach((t, i) =>
      google.addVoided(
        PACKAGE,
        {
          purchaseToken: t,
          orderId: `GPA.${id}-V${i}`,
          purchaseTimeMillis: String(Date.now() - 40 * DAY),
          voidedTimeMillis: String(voidedAt + i),
          voidedSource: 0,
          voidedReason: 1,
        },
        { subscription: true, seenAt: Date.now() - DAY },
      ),
    );
    google.addVoided(
      PACKAGE,
      { purchaseToken: `unknown-${id}`, orderId: `GPA.${id}-NONE`, voidedTimeMillis: String(voidedAt), voidedSource: 1, voidedReason: 0 },
      { seenAt: Date.now() - DAY },
    );
    const listed = google.count(/voidedpurchases/);
    const res = await runCli(['import', 'google-voided', '--app', 'app-g', '--since', new Date(Date.now() - 3 * DAY).toISOString()], { ...env });
    expect(res.stderr).toMatch(new RegExp(`skipped: order GPA.${id}-NONE is not in the read models`));
    expect(res.code).toBe(0);
    expect(res.stderr).toMatch(/imported 3 line/);
    expect(google.count(/voidedpurchases/) - listed).toBe(1);
    await embeddedLogCaughtUp(db.dataSource);
    expect(await tx(`google:GPA.${id}-V1`)).toMatchObject({
      revocationDate: new Date(voidedAt + 1).toISOString(),
      isExpired: true,
      cancelationReason: 'Customer',
      receiptId: `google:v1-${id}`,
    });
    const [{ version_time }] = await db.dataSource.query(`SELECT version_time FROM read_model.transactions WHERE transaction_id = $1`, [`google:GPA.${id}-V1`]);
    // Imported after the refund: the revocation follows the snapshot it revokes (Google's purchase state shows no refund).
    expect(new Date(version_time).getTime()).toBeGreaterThan(voidedAt + 1);

    const events = await logSize();
    const again = await runCli(['import', 'google-voided', '--app', 'app-g', '--since', new Date(Date.now() - 3 * DAY).toISOString()], { ...env });
    expect(again.code).toBe(0);
    expect(again.stderr).toMatch(/imported 0 line/);
    expect(await logSize()).toBe(events);
  });
});
