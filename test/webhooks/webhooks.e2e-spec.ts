import { jest } from '@jest/globals';
import { startTestApp } from '../utils/app.js';
import { listAll, queuedEverything, type Row } from '../utils/change-feed.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { expectEventually } from '../utils/expect-eventually.js';
import { linkEvent, project, txEvent } from '../utils/events.js';
import { runCli, startService } from '../utils/processes.js';
import { startReceiver, type Received } from '../utils/webhook-receiver.js';
import { addEndpoint, redeliver } from '../../src/webhooks/webhook-endpoints.js';
import { pruneDeliveries } from '../../src/webhooks/webhook-dispatcher.js';

jest.setTimeout(180_000);

const FAST = { WEBHOOK_ALLOW_HOSTS: '127.0.0.1', WEBHOOK_POLL_MS: '50', WEBHOOK_RETRY_BASE_MS: '50', WEBHOOK_TIMEOUT_MS: '500' };

/** The newest state each row reached at the receiver, by listing. */
function lastStates(received: Received[]) {
  const out = { customers: new Map<string, Row>(), transactions: new Map<string, Row>() };
  for (const r of received) {
    if (r.message.type === 'customer.updated') out.customers.set(r.message.data.applicationUsername as string, r.message.data);
    else out.transactions.set(r.message.data.transactionId as string, r.message.data);
  }
  return out;
}

const renewal = (user: string, n: number, o: { app?: string } = {}) =>
  txEvent({
    app: o.app,
    time: `2025-0${n}-01T00:00:00Z`,
    data: {
      transactionId: `apple:${user}-${n}`,
      receiptId: `apple:r-${user}`,
      purchaseId: `apple:p-${user}`,
      purchaseDate: '2025-01-01T00:00:00Z',
      lastRenewalDate: `2025-0${n}-01T00:00:00Z`,
      expirationDate: `2030-0${n}-01T00:00:00Z`,
      applicationUsername: user,
    },
  });

describe('webhooks (e2e: real PostgreSQL, a real HTTP receiver on loopback)', () => {
  let db: TestDatabase;
  const closers: (() => Promise<unknown>)[] = [];

  beforeEach(async () => {
    db = await createTestDatabase('webhooks');
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
    await db?.drop();
  });

  const app = async (env: Record<string, string> = {}) => {
    const api = await startTestApp({ databaseUrl: db.url, env: { ...FAST, ...env } });
    closers.push(() => api.close());
    return api;
  };
  const receiver = async (...args: Parameters<typeof startReceiver>) => {
    const r = await startReceiver(...args);
    closers.push(() => r.close());
    return r;
  };
  const cli = (args: string[]) => runCli(['webhooks', ...args], { DATABASE_URL: db.url, WEBHOOK_ALLOW_HOSTS: '127.0.0.1' });

  it('registered with the CLI, receives every change from then on, signed, in order per customer', async () => {
    const api = await app();
    const hook = await receiver();
    await project(db.dataSource, [renewal('before', 1)]); // before registration: not sent

    const refused = await cli(['add', '--app', 'app-1', '--url', 'http://hooks.example.com/x']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('must use https (hooks.example.com is not listed in WEBHOOK_ALLOW_HOSTS)');

    const added = await cli(['add', '--app', 'app-1', '--url', hook.url]);
    expect(added.code).toBe(0);
    const secret = added.stdout.trim();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);

    for (let n = 1; n <= 4; n++) await project(db.dataSource, [renewal('alice', n), renewal('bob', n)]);
    await project(db.dataSource, [
      linkEvent({ time: '2025-06-01T00:00:00Z', receiptId: 'apple:r-bob', user: 'carol' }),
      txEvent({ app: 'app-2', time: '2025-01-01T00:00:00Z', data: { transactionId: 'apple:other-app', purchaseDate: '2025-01-01T00:00:00Z' } }),
    ]);

    const token = api.token('app-1');
    await expectEventually(async () => {
      const last = lastStates(hook.received);
      const customers = await listAll(api, token, 'customers');
      customers.delete('before');
      expect(last.customers).toEqual(customers);
      const transactions = await listAll(api, token, 'transactions');
      transactions.delete('apple:before-1');
      expect(last.transactions).toEqual(transactions);
    }, 30_000);

    expect(hook.received.every((r) => hook.verify(secret, r))).toBe(true);
    expect(hook.received.some((r) => hook.verify('whsec_' + Buffer.alloc(32).toString('base64'), r))).toBe(false);
    expect(hook.received.map((r) => r.message.data.transactionId ?? r.message.data.applicationUsername)).not.toContain('apple:other-app');
    // alice's summary arrives in the order it changed: each renewal extends her expiration
    const aliceExpirations = hook.received
      .filter((r) => r.message.type === 'customer.updated' && r.message.data.applicationUsername === 'alice')
      .map((r) => (r.message.data.customerInfo as { expirationDate: string }).expirationDate);
    expect(aliceExpirations).toEqual([...aliceExpirations].sort());
    expect(aliceExpirations.at(-1)).toBe('2030-04-01T00:00:00.000Z');
    expect(new Set(hook.received.map((r) => r.id)).size).toBe(hook.received.length);

    const list = await cli(['list']);
    expect(list.stdout).toMatch(new RegExp(`^1\\tapp-1\\t${hook.url}\\tactive\\tpending 0, delivered ${hook.received.length}, failed 0$`, 'm'));
    const deliveries = await cli(['deliveries', '--id', '1', '--limit', '2']);
    expect(deliveries.stdout.trim().split('\n')).toHaveLength(2);
    expect(deliveries.stdout).toMatch(/\tdelivered\tattempts 1\t/);
    const removed = await cli(['remove', '--id', '1']);
    expect(removed.stdout).toContain('webhook endpoint 1 removed');
    expect((await cli(['remove', '--id', '1'])).stderr).toContain('no webhook endpoint 1');
  });

  it('retries after 500s and timeouts with backoff until the receiver takes it', async () => {
    const api = await app();
    const hook = await receiver((_r, attempt) => (attempt === 1 ? { status: 500, body: 'try later' } : attempt === 2 ? 'hang' : { status: 200 }));
    const { secret } = await addEndpoint(db.dataSource, api.config.webhooks, { appId: 'app-1', url: hook.url });
    await project(db.dataSource, [renewal('alice', 1)]);
    await expectEventually(async () => {
      const rows = await db.dataSource.query(`SELECT status, attempts FROM public.webhook_deliveries ORDER BY id`);
      expect(rows).toEqual([
        { status: 'delivered', attempts: 3 },
        { status: 'delivered', attempts: 3 },
      ]);
    }, 30_000);
    expect(hook.received).toHaveLength(6);
    expect(hook.received.every((r) => hook.verify(secret, r))).toBe(true);
    const metrics = (await api.get('/metrics')).body as string;
    expect(metrics).toMatch(/subscription_records_webhook_deliveries_total\{outcome="retry"\} 4/);
    expect(metrics).toMatch(/subscription_records_webhook_deliveries_total\{outcome="delivered"\} 2/);
    expect(metrics).toMatch(/subscription_records_webhook_attempt_duration_seconds_count\{outcome="retry"\} 4/);
  });

  it('never follows a redirect, keeps only an excerpt of a failing answer, and bounds the attempts in flight', async () => {
    let concurrent = 0;
    let most = 0;
    const elsewhere = await receiver();
    const api = await app({ WEBHOOK_MAX_IN_FLIGHT: '2' });
    const user = (r: Received) =>
      r.message.type === 'customer.updated' ? r.message.data.applicationUsername : String(r.message.data.transactionId).slice(6, -2);
    const hook = await receiver((r) => {
      if (user(r) === 'redirected') return { status: 307, headers: { location: elsewhere.url } };
      if (user(r) === 'verbose') return { status: 500, body: 'x'.repeat(10_000) };
      concurrent++;
      most = Math.max(most, concurrent);
      setTimeout(() => concurrent--, 150);
      return { status: 200, delayMs: 150 };
    });
    await addEndpoint(db.dataSource, api.config.webhooks, { appId: 'app-1', url: hook.url });
    await project(
      db.dataSource,
      ['redirected', 'verbose', 'u1', 'u2', 'u3', 'u4', 'u5', 'u6'].map((u) => renewal(u, 1)),
    );
    await expectEventually(async () => {
      const rows = await db.dataSource.query(
        `SELECT order_key, status, last_error FROM public.webhook_deliveries WHERE status <> 'delivered' OR order_key = 'customer:u1' ORDER BY order_key, id`,
      );
      expect(rows).toEqual([
        { order_key: 'customer:redirected', status: 'pending', last_error: 'HTTP 307 (redirects are not followed)' },
        { order_key: 'customer:redirected', status: 'pending', last_error: null },
        { order_key: 'customer:u1', status: 'delivered', last_error: null },
        { order_key: 'customer:u1', status: 'delivered', last_error: null },
        { order_key: 'customer:verbose', status: 'pending', last_error: `HTTP 500: ${'x'.repeat(256)}` },
        { order_key: 'customer:verbose', status: 'pending', last_error: null },
      ]);
      const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM public.webhook_deliveries WHERE status = 'delivered'`);
      expect(n).toBe(12);
    }, 30_000);
    expect(most).toBeLessThanOrEqual(2);
    expect(most).toBe(2);
    expect(elsewhere.received).toHaveLength(0);
  });

  it("keeps a customer's later changes back while an earlier one is being retried", async () => {
    let failing = true;
    const api = await app();
    const hook = await receiver(() => (failing ? { status: 503 } : { status: 200 }));
    await addEndpoint(db.dataSource, api.config.webhooks, { appId: 'app-1', url: hook.url });
    await project(db.dataSource, [renewal('alice', 1)]);
    await expectEventually(() => expect(hook.received.length).toBeGreaterThanOrEqual(2));
    await project(db.dataSource, [renewal('alice', 2)]);
    // a positive barrier, not a pause: alice's later changes are queued, and the endpoint was tried again since
    await expectEventually(async () => expect(await queuedEverything(db.dataSource, 'app-1')).toBe(true));
    const triedBefore = hook.received.length;
    await expectEventually(() => expect(hook.received.length).toBeGreaterThan(triedBefore));
    // only the first change of alice (her summary, then her transaction) has been tried
    expect(new Set(hook.received.map((r) => r.id)).size).toBe(1);
    failing = false;
    await expectEventually(async () => {
      const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM public.webhook_deliveries WHERE status = 'delivered'`);
      expect(n).toBe(4);
    });
    const order = [...new Map(hook.received.map((r) => [r.id, r])).values()].map(
      (r) => r.message.type + ':' + ((r.message.data.customerInfo as { expirationDate?: string })?.expirationDate ?? r.message.data.transactionId),
    );
    expect(order).toEqual([
      'customer.updated:2030-01-01T00:00:00.000Z',
      'transaction.updated:apple:alice-1',
      'customer.updated:2030-02-01T00:00:00.000Z',
      'transaction.updated:apple:alice-2',
    ]);
  });

  it('disables an endpoint that fails for longer than WEBHOOK_MAX_AGE, says so in list, and redeliver enables it', async () => {
    let up = false;
    const api = await app({ WEBHOOK_MAX_AGE: '2s' });
    const hook = await receiver(() => (up ? { status: 200 } : { status: 500, body: 'down for maintenance' }));
    const { id } = await addEndpoint(db.dataSource, api.config.webhooks, { appId: 'app-1', url: hook.url });
    await project(db.dataSource, [renewal('alice', 1)]);
    await expectEventually(async () => {
      const [e] = await db.dataSource.query(`SELECT disabled_at, disabled_reason FROM public.webhook_endpoints`);
      expect(e.disabled_at).not.toBeNull();
      expect(e.disabled_reason).toMatch(/^failing since .*Z: HTTP 500: down for maintenance$/);
    }, 30_000);
    const list = await cli(['list']);
    expect(list.stdout).toMatch(new RegExp(`\\tdisabled since .*HTTP 500: down for maintenance.*redeliver --id ${id} enables it`));
    const tried = hook.received.length;
    // a witness endpoint of the same app: once it has alice's change, the dispatcher has gone past it
    const witness = await receiver(() => ({ status: 200 }));
    await addEndpoint(db.dataSource, api.config.webhooks, { appId: 'app-1', url: witness.url });
    await project(db.dataSource, [renewal('alice', 2)]);
    await expectEventually(() => expect(witness.received.map((r) => r.message.type).sort()).toEqual(['customer.updated', 'transaction.updated']));
    expect(hook.received.length).toBe(tried); // nothing is sent to a disabled endpoint

    up = true;
    const redelivered = await cli(['redeliver', '--id', id]);
    expect(redelivered.stdout).toMatch(new RegExp(`webhook endpoint ${id}: \\d+ deliver(y|ies) queued again; the endpoint is enabled`));
    await expectEventually(async () => {
      const rows = await db.dataSource.query(`SELECT status, count(*)::int AS n FROM public.webhook_deliveries WHERE endpoint_id = $1 GROUP BY 1`, [id]);
      expect(rows).toEqual([{ status: 'delivered', n: 4 }]);
    }, 30_000);
  });

  it('deletes delivered deliveries after a week and failed ones after a month, keeping the rest', async () => {
    const api = await app({ WEBHOOK_DELIVERY_ENABLED: 'false' });
    const { id } = await addEndpoint(db.dataSource, api.config.webhooks, { appId: 'app-1', url: 'http://127.0.0.1:9/x' });
    const row = (status: string, ageDays: number) =>
      db.dataSource.query(
        `INSERT INTO public.webhook_deliveries (endpoint_id, event_type, order_key, payload, status, delivered_at, last_attempt_at)
         VALUES ($1, 'customer.updated', $2, '{}', $3, CASE WHEN $3 = 'delivered' THEN now() - $4 * interval '1 day' END, now() - $4 * interval '1 day')`,
        [id, `k-${status}-${ageDays}`, status, ageDays],
      );
    await row('delivered', 8);
    await row('delivered', 6);
    await row('failed', 31);
    await row('failed', 29);
    await row('pending', 60);
    await pruneDeliveries(db.dataSource);
    const left = await db.dataSource.query(`SELECT order_key FROM public.webhook_deliveries ORDER BY order_key`);
    expect(left.map((r: { order_key: string }) => r.order_key)).toEqual(['k-delivered-6', 'k-failed-29', 'k-pending-60']);
  });

  it('redeliver never sends a row back in time: a failed state with a newer delivery of its row stays failed, is refused by id, and goes when the newer one is pruned', async () => {
    const api = await app({ WEBHOOK_DELIVERY_ENABLED: 'false' });
    const { id } = await addEndpoint(db.dataSource, api.config.webhooks, { appId: 'app-1', url: 'http://127.0.0.1:9/x' });
    const row = async (rowKey: string, status: string, ageDays: number) => {
      const [{ id: deliveryId }] = await db.dataSource.query(
        `INSERT INTO public.webhook_deliveries (endpoint_id, event_type, order_key, row_key, payload, status, delivered_at, last_attempt_at)
         VALUES ($1, 'customer.updated', $2, $2, '{}', $3, CASE WHEN $3 = 'delivered' THEN now() - $4 * interval '1 day' END, now() - $4 * interval '1 day')
         RETURNING id::text`,
        [id, rowKey, status, ageDays],
      );
      return deliveryId as string;
    };
    // alice: a state given up, then a newer state delivered; bob: one state given up
    const aliceOld = await row('customer:alice', 'failed', 1);
    const aliceNew = await row('customer:alice', 'delivered', 1);
    const bob = await row('customer:bob', 'failed', 1);
    const status = async () =>
      Object.fromEntries(
        (
          (await db.dataSource.query(`SELECT id::text, status FROM public.webhook_deliveries WHERE endpoint_id = $1`, [id])) as { id: string; status: string }[]
        ).map((r) => [r.id, r.status]),
      );

    await expect(redeliver(db.dataSource, id, aliceOld)).rejects.toThrow(`delivery ${aliceOld} carries an older state of its row than delivery ${aliceNew}`);
    expect(await redeliver(db.dataSource, id)).toEqual({ queued: 1, superseded: 1 });
    expect(await status()).toEqual({ [aliceOld]: 'failed', [aliceNew]: 'delivered', [bob]: 'pending' });

    // a week on, the delivered state is pruned, and the failed one older than it with it (not after a month)
    await db.dataSource.query(`UPDATE public.webhook_deliveries SET delivered_at = now() - interval '8 days' WHERE id = $1`, [aliceNew]);
    await pruneDeliveries(db.dataSource);
    expect(await status()).toEqual({ [bob]: 'pending' });
  });

  it('rotate-secret: messages carry signatures with both the new and the previous secret', async () => {
    const api = await app();
    const hook = await receiver();
    const { secret: old } = await addEndpoint(db.dataSource, api.config.webhooks, { appId: 'app-1', url: hook.url });
    const rotated = await cli(['rotate-secret', '--id', '1']);
    expect(rotated.code).toBe(0);
    const secret = rotated.stdout.trim();
    expect(secret).not.toBe(old);
    await project(db.dataSource, [renewal('alice', 1)]);
    await expectEventually(() => expect(hook.received).toHaveLength(2));
    for (const r of hook.received) {
      expect(r.signature.split(' ')).toHaveLength(2);
      expect(hook.verify(secret, r)).toBe(true);
      expect(hook.verify(old, r)).toBe(true);
    }
  });

  it('two instances share the work without sending anything twice', async () => {
    // A generous attempt timeout: on a loaded machine a 5 ms answer can take longer than FAST's 500 ms
    // to be read, and that attempt is rightly sent again (at least once); this test is about two
    // instances never claiming the same delivery, so only a double claim may duplicate a message.
    const slowOk = { WEBHOOK_TIMEOUT_MS: '10000' };
    const [a, b] = [await app(slowOk), await app(slowOk)];
    const hook = await receiver(() => ({ status: 200, delayMs: 5 }));
    await addEndpoint(db.dataSource, a.config.webhooks, { appId: 'app-1', url: hook.url });
    for (let n = 0; n < 10; n++)
      await project(
        db.dataSource,
        Array.from({ length: 10 }, (_, i) => renewal(`user${n * 10 + i}`, 1)),
      );
    await expectEventually(async () => {
      const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM public.webhook_deliveries WHERE status = 'delivered'`);
      expect(n).toBe(200);
    }, 60_000);
    expect(hook.received).toHaveLength(200);
    expect(new Set(hook.received.map((r) => r.id)).size).toBe(200);
    expect(lastStates(hook.received).customers).toEqual(await listAll(b, b.token('app-1'), 'customers'));
  });

  it('loses nothing when the service is killed mid-delivery: the next instance sends it again', async () => {
    let hang = true;
    const hook = await receiver(() => (hang ? 'hang' : { status: 200 }));
    const env = { DATABASE_URL: db.url, CONSUMER_ENABLED: 'false', PORT: '0', JWT_SECRET: 'x'.repeat(40), ...FAST, WEBHOOK_TIMEOUT_MS: '3000' };
    const first = startService(env);
    closers.push(() => first.kill());
    const api = await app({ WEBHOOK_DELIVERY_ENABLED: 'false' });
    await addEndpoint(db.dataSource, api.config.webhooks, { appId: 'app-1', url: hook.url });
    await project(db.dataSource, [renewal('alice', 1)]);
    await expectEventually(() => expect(hook.received.length).toBeGreaterThanOrEqual(1), 30_000);
    expect(await first.kill('SIGKILL')).toBe(-1);
    hang = false;
    const second = startService({ ...env, WEBHOOK_TIMEOUT_MS: '500' });
    closers.push(() => second.kill());
    await expectEventually(async () => {
      const rows = await db.dataSource.query(`SELECT status FROM public.webhook_deliveries`);
      expect(rows).toEqual([{ status: 'delivered' }, { status: 'delivered' }]);
    }, 60_000);
    const ids = hook.received.map((r) => r.id);
    expect(new Set(ids).size).toBe(2); // the interrupted message came again under its webhook-id
  });
});
