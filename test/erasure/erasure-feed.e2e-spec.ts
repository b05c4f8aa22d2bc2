import { jest } from '@jest/globals';
import type { WebhookSettings } from '../../src/config/app-config.js';
import { queueChanges } from '../../src/webhooks/queue-changes.js';
import { WebhookSender } from '../../src/webhooks/send-deliveries.js';
import { addEndpoint } from '../../src/webhooks/webhook-endpoints.js';
import { appendToEventLog, readEventLog } from '../../src/event-log/event-log.js';
import { applyBatch } from '../../src/projection/apply-batch.js';
import { startTestApp, type TestApp } from '../utils/app.js';
import { endingAfterSnapshot, listAll, queuedEverything, ROW_KEY, transactionElsewhere, type Listing, type Row } from '../utils/change-feed.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { linkEvent, project, txEvent } from '../utils/events.js';
import { runCli } from '../utils/processes.js';
import { startReceiver } from '../utils/webhook-receiver.js';

jest.setTimeout(120_000);

// Deletion entries (docs/change-feed.md, "Deletions"): a feed client and a webhook receiver that
// apply them end equal to the listings; a client that began after an erasure is never told the name.
// The same entries announce the customers and transactions a rebuild from a partial log drops.

const APP = 'erase-feed';
const ALICE = 'alice.feed@example.com';
const CAROL = 'carol.feed@example.com';
const BOB = 'bob.feed@example.com';

const day = (d: number) => new Date(Date.UTC(2026, 0, d)).toISOString();
const erasure = (user: string, time: string) => ({
  specversion: '1.0',
  id: `erase-${user}-${time}`,
  source: 'test',
  type: 'customer.erased',
  time,
  appid: APP,
  data: { applicationUsername: user },
});
const tx = (id: string, receipt: string, user: string | undefined, d: number) =>
  txEvent({
    app: APP,
    time: day(d),
    data: {
      transactionId: `apple:${id}`,
      receiptId: `apple:${receipt}`,
      purchaseId: `apple:p-${receipt}`,
      expirationDate: day(d + 30),
      ...(user ? { applicationUsername: user } : {}),
    },
  });

/** A change-feed client that applies deletion entries; returns its cursor after the last (empty) page. */
async function sync(api: TestApp, token: string, listing: Listing, cursor: string, rows: Map<string, Row>, seen: Row[], limit = 2): Promise<string> {
  for (;;) {
    const res = await api.get(`/v2/${listing}?changedAfter=${encodeURIComponent(cursor)}&limit=${limit}`, token);
    if (res.status !== 200) throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
    for (const row of res.body.rows as Row[]) {
      seen.push(row);
      const key = row[ROW_KEY[listing]] as string;
      if (row.deleted === true) rows.delete(key);
      else rows.set(key, row);
    }
    cursor = res.body.paging.next;
    if (res.body.rows.length === 0) return cursor;
  }
}

describe('change-feed deletions (e2e: real PostgreSQL, the feed over HTTP, a webhook receiver on loopback)', () => {
  let db: TestDatabase;
  let api: TestApp;
  let hook: Awaited<ReturnType<typeof startReceiver>>;
  let settings: WebhookSettings;
  const secrets = new Map<string, string>();
  const received = new Map<string, { customers: Map<string, Row>; transactions: Map<string, Row>; types: string[] }>();

  beforeAll(async () => {
    db = await createTestDatabase('erasure_feed');
    api = await startTestApp({ databaseUrl: db.url, env: { WEBHOOK_DELIVERY_ENABLED: 'false', WEBHOOK_ALLOW_HOSTS: '127.0.0.1' } });
    settings = { ...api.config.webhooks, retryBaseMs: 50, maxInFlight: 4, timeoutMs: 5_000 };
    hook = await startReceiver(() => ({ status: 204 }));
  });
  afterAll(async () => {
    await hook?.close();
    await api?.close();
    await db?.drop();
  });

  /**
   * Queues and sends until the application's endpoints have queued every change and nothing is
   * pending; applies what the receiver got, per endpoint secret, in arrival order. `queueingDb`: the
   * connection queueing rounds use (endingAfterSnapshot). Returns how many rounds ended with a change
   * not yet queued.
   */
  async function deliver(app = APP, queueingDb = db.dataSource): Promise<number> {
    const sender = new WebhookSender(db.dataSource, settings);
    let roundsBehind = 0;
    for (let i = 0; ; i++) {
      await queueChanges(queueingDb, () => new Date());
      await sender.sendDue();
      await sender.idle();
      // Asked after the round, of the cursors it moved: the feed's mark, read before the round, can
      // be above the round's own, and then the round queues nothing (test/utils/change-feed.ts).
      const queued = await queuedEverything(db.dataSource, app);
      if (!queued) roundsBehind++;
      const [{ pending }] = await db.dataSource.query(`SELECT count(*)::int AS pending FROM public.webhook_deliveries WHERE status = 'pending'`);
      if (pending === 0 && queued) break;
      if (i === 2000) throw new Error(`${pending} deliveries still pending (every change queued: ${queued})`);
      if (pending === 0) await new Promise((r) => setTimeout(r, 5));
    }
    await sender.close();
    for (const r of hook.received.splice(0)) {
      const [id] = [...secrets].find(([, secret]) => hook.verify(secret, r)) ?? [];
      if (id === undefined) throw new Error('a message no endpoint signed');
      const copy = received.get(id)!;
      copy.types.push(r.message.type);
      const data = r.message.data;
      if (r.message.type === 'customer.deleted') copy.customers.delete(data.applicationUsername as string);
      else if (r.message.type === 'customer.updated') copy.customers.set(data.applicationUsername as string, data);
      else if (r.message.type === 'transaction.deleted') copy.transactions.delete(data.transactionId as string);
      else copy.transactions.set(data.transactionId as string, data);
    }
    return roundsBehind;
  }
  async function register(fromStart: boolean, appId = APP): Promise<string> {
    const { id, secret } = await addEndpoint(db.dataSource, settings, { appId, url: hook.url, fromStart });
    secrets.set(id, secret);
    received.set(id, { customers: new Map(), transactions: new Map(), types: [] });
    return id;
  }

  it('a client and a receiver that apply deletions end equal to the listings; a client or endpoint that began after an erasure never gets its name', async () => {
    const token = api.token(APP);
    const early = await register(false);
    await project(db.dataSource, [
      tx('a-1', 'r-a', ALICE, 1),
      tx('a-2', 'r-a', ALICE, 31),
      tx('c-1', 'r-c', CAROL, 2),
      tx('b-1', 'r-b', BOB, 3),
      linkEvent({ app: APP, time: day(5), receiptId: 'apple:r-c', user: ALICE }), // carol's receipt moves to alice
      tx('c-2', 'r-c2', CAROL, 6),
    ]);
    const client = { customers: new Map<string, Row>(), transactions: new Map<string, Row>() };
    const seen: Row[] = [];
    const cursors = {
      customers: await sync(api, token, 'customers', '0', client.customers, seen),
      transactions: await sync(api, token, 'transactions', '0', client.transactions, seen),
    };
    await deliver();
    expect([...client.customers.keys()].sort()).toEqual([ALICE, BOB, CAROL]);

    // alice and carol are erased; alice signs up again afterwards (a new customer); bob renews.
    await project(db.dataSource, [erasure(ALICE, day(40)), erasure(CAROL, day(40))]);
    await project(db.dataSource, [tx('b-2', 'r-b', BOB, 41)]);
    await project(db.dataSource, [linkEvent({ app: APP, time: day(42), receiptId: 'apple:r-new', user: ALICE }), tx('n-1', 'r-new', undefined, 42)]);

    seen.length = 0;
    cursors.customers = await sync(api, token, 'customers', cursors.customers, client.customers, seen);
    cursors.transactions = await sync(api, token, 'transactions', cursors.transactions, client.transactions, seen);
    await deliver();
    // As if the erasures had been applied two minutes before the next endpoint is registered (within
    // a minute of its registration they are still sent to it: queue-changes.ts DELETIONS_BEFORE_REGISTRATION_MS).
    await db.dataSource.query(`UPDATE public.feed_deletions SET deleted_at = deleted_at - interval '2 minutes'`);
    const late = await register(true); // from the start, after the erasures
    await deliver();
    const listed = { customers: await listAll(api, token, 'customers'), transactions: await listAll(api, token, 'transactions') };
    expect([...listed.customers.keys()].sort()).toEqual([ALICE, BOB]);
    expect(listed.customers.get(ALICE)!.receiptIds).toEqual(['apple:r-new']);

    // The client that held the rows got the deletion entries, documented shape, in position order.
    expect(seen.filter((r) => r.deleted === true)).toEqual([
      { applicationUsername: ALICE, customerInfo: {}, receiptIds: [], deleted: true },
      { applicationUsername: CAROL, customerInfo: {}, receiptIds: [], deleted: true },
    ]);
    expect(seen.findIndex((r) => r.applicationUsername === ALICE && r.deleted === true)).toBeLessThan(
      seen.findIndex((r) => r.applicationUsername === ALICE && r.deleted !== true),
    );
    expect(client).toEqual(listed);
    expect({ customers: received.get(early)!.customers, transactions: received.get(early)!.transactions }).toEqual(listed);
    expect(received.get(early)!.types.filter((t) => t === 'customer.deleted')).toHaveLength(2);

    // A client starting from 0 now, and the endpoint registered from the start after the erasures,
    // end equal too, and were never sent carol's name (erased, not back) nor a deletion entry.
    const fresh = { customers: new Map<string, Row>(), transactions: new Map<string, Row>() };
    const freshSeen: Row[] = [];
    await sync(api, token, 'customers', '0', fresh.customers, freshSeen, 1);
    await sync(api, token, 'transactions', '0', fresh.transactions, freshSeen, 1);
    expect(fresh).toEqual(listed);
    expect(JSON.stringify(freshSeen)).not.toContain(CAROL);
    expect(freshSeen.filter((r) => r.deleted === true)).toEqual([]);
    expect({ customers: received.get(late)!.customers, transactions: received.get(late)!.transactions }).toEqual(listed);
    expect(received.get(late)!.types).not.toContain('customer.deleted');
    const lateBodies = await db.dataSource.query(`SELECT payload FROM public.webhook_deliveries WHERE endpoint_id = $1::bigint`, [late]);
    expect(JSON.stringify(lateBodies)).not.toContain(CAROL);
  });

  it('a customer signed up again by a batch that began before the erasure committed (its row positioned below the deletion entry) stays with the client and the receiver', async () => {
    const app = 'resignup-race';
    const GINA = 'gina.race@example.com';
    const ev = (id: string, receipt: string, d: number) =>
      txEvent({
        app,
        time: day(d),
        data: {
          transactionId: `apple:${id}`,
          receiptId: `apple:${receipt}`,
          purchaseId: `apple:p-${receipt}`,
          expirationDate: day(d + 30),
          applicationUsername: GINA,
        },
      });
    const endpoint = await register(false, app);
    await project(db.dataSource, [ev('g-1', 'r-g', 1)]);
    const token = api.token(app);
    const client = new Map<string, Row>();
    const seen: Row[] = [];
    const cursor = await sync(api, token, 'customers', '0', client, seen);
    await deliver(app);
    expect([...client.keys()]).toEqual([GINA]);

    await project(db.dataSource, [{ ...erasure(GINA, day(40)), appid: app }]);
    await project(db.dataSource, [ev('g-2', 'r-g2', 42)]);
    // A position is its writer's transaction id, taken at the batch's first write: a batch of another
    // partition that began before the erasure's and signed gina up again once the erasure had
    // committed leaves her new row below the deletion entry (the replica property test met this).
    await db.dataSource.query(
      `UPDATE read_model.customers c SET change_position = d.change_position - 1 FROM public.feed_deletions d
       WHERE c.app_id = $1 AND d.app_id = $1 AND d.feed_table = 'customers' AND d.row_key = c.application_username`,
      [app],
    );
    seen.length = 0;
    await sync(api, token, 'customers', cursor, client, seen);
    await deliver(app);
    const listed = await listAll(api, token, 'customers');
    expect([...listed.keys()]).toEqual([GINA]);
    expect(listed.get(GINA)!.receiptIds).toEqual(['apple:r-g2']);
    expect(seen.filter((r) => r.deleted === true)).toEqual([]);
    expect(client).toEqual(listed);
    expect(received.get(endpoint)!.customers).toEqual(listed);
    expect(received.get(endpoint)!.types).not.toContain('customer.deleted');
  });

  it('a drain whose queueing rounds read a held-back feed mark (transactions of another database ending inside their snapshots) still sends every change', async () => {
    // What test files running beside this one can do at random: a transaction of their database,
    // older than these changes, ends after a queueing round took its snapshot and before the round
    // reads the mark. That round's mark is below the changes, although a look at the mark just
    // before it found every change below it.
    const app = 'held-back-mark';
    const HANK = 'hank.mark@example.com';
    const endpoint = await register(false, app);
    const elsewhere = [await transactionElsewhere(), await transactionElsewhere(), await transactionElsewhere()];
    let roundsBehind: number;
    try {
      const outcome = await project(db.dataSource, [
        txEvent({
          app,
          time: day(1),
          data: { transactionId: 'apple:h-1', receiptId: 'apple:r-h', purchaseId: 'apple:p-r-h', expirationDate: day(31), applicationUsername: HANK },
        }),
      ]);
      expect(outcome).toMatchObject({ kind: 'applied' });
      roundsBehind = await deliver(
        app,
        endingAfterSnapshot(db.dataSource, async (id) => (id === endpoint ? elsewhere.shift()?.end() : undefined)),
      );
    } finally {
      await Promise.all(elsewhere.map((t) => t.end()));
    }
    const token = api.token(app);
    const listed = { customers: await listAll(api, token, 'customers'), transactions: await listAll(api, token, 'transactions') };
    expect(roundsBehind).toBeGreaterThan(0); // the mark was held back: some round did not reach the purchase
    expect([...listed.customers.keys()]).toEqual([HANK]);
    expect({ customers: received.get(endpoint)!.customers, transactions: received.get(endpoint)!.transactions }).toEqual(listed);
  });

  it('a rebuild from a partial log (--allow-partial-history) announces the customers and transactions it drops: the client and the receiver end equal to both listings', async () => {
    const app = 'partial-feed';
    const topic = 'partial-feed-log';
    const DAVE = 'dave.partial@example.com'; // named only by events retention removes
    const ERIN = 'erin.partial@example.com'; // named before and after the cut
    const FRANK = 'frank.partial@example.com';
    const ev = (id: string, receipt: string, user: string, d: number) =>
      txEvent({
        app,
        time: day(d),
        data: {
          transactionId: `apple:${id}`,
          receiptId: `apple:${receipt}`,
          purchaseId: `apple:p-${receipt}`,
          expirationDate: day(d + 30),
          applicationUsername: user,
        },
      });
    const events = [ev('d-1', 'r-d', DAVE, 1), ev('e-1', 'r-e', ERIN, 2), ev('e-2', 'r-e2', ERIN, 3), ev('f-1', 'r-f', FRANK, 4)];
    const endpoint = await register(false, app); // before the events: it is sent every row
    const first = BigInt(
      await appendToEventLog(
        db.dataSource,
        topic,
        events.map((e) => ({ key: null, value: Buffer.from(JSON.stringify(e)) })),
      ),
    );
    const messages = await readEventLog(db.dataSource, topic, 0, first.toString(), events.length);
    expect(await applyBatch(db.dataSource, { topic, partition: 0, messages })).toMatchObject({ kind: 'applied' });

    const token = api.token(app);
    const client = { customers: new Map<string, Row>(), transactions: new Map<string, Row>() };
    const seen: Row[] = [];
    // A transactions client that began (from 0) before the rebuild; the customers one too.
    const cursors = {
      customers: await sync(api, token, 'customers', '0', client.customers, seen),
      transactions: await sync(api, token, 'transactions', '0', client.transactions, seen),
    };
    await deliver(app);
    expect([...client.customers.keys()].sort()).toEqual([DAVE, ERIN, FRANK]);
    expect([...client.transactions.keys()].sort()).toEqual(['apple:d-1', 'apple:e-1', 'apple:e-2', 'apple:f-1']);
    expect([...received.get(endpoint)!.customers.keys()].sort()).toEqual([DAVE, ERIN, FRANK]);
    expect([...received.get(endpoint)!.transactions.keys()].sort()).toEqual(['apple:d-1', 'apple:e-1', 'apple:e-2', 'apple:f-1']);

    // retention removed the first two events (dave's only one, erin's first)
    await db.dataSource.query(`DELETE FROM public.event_log WHERE topic = $1 AND "offset" < $2`, [topic, (first + 2n).toString()]);
    const env = { DATABASE_URL: db.url, KAFKA_TOPIC: topic, LOG_LEVEL: 'error' };
    const rebuilt = await runCli(['rebuild', '--allow-partial-history'], env);
    expect(rebuilt.code === 0 ? 'exit 0' : `exit ${rebuilt.code}: ${rebuilt.stderr}`).toBe('exit 0');

    seen.length = 0;
    cursors.customers = await sync(api, token, 'customers', cursors.customers, client.customers, seen);
    cursors.transactions = await sync(api, token, 'transactions', cursors.transactions, client.transactions, seen);
    await deliver(app);
    const listed = { customers: await listAll(api, token, 'customers'), transactions: await listAll(api, token, 'transactions') };
    expect([...listed.customers.keys()].sort()).toEqual([ERIN, FRANK]);
    expect([...listed.transactions.keys()].sort()).toEqual(['apple:e-2', 'apple:f-1']);
    expect(seen.filter((r) => r.deleted === true)).toEqual([
      { applicationUsername: DAVE, customerInfo: {}, receiptIds: [], deleted: true },
      ...['apple:d-1', 'apple:e-1'].map((transactionId) => ({ transactionId, purchaseId: '', productId: '', platform: 'apple', receiptId: '', deleted: true })),
    ]);
    expect(client).toEqual(listed);
    expect({ customers: received.get(endpoint)!.customers, transactions: received.get(endpoint)!.transactions }).toEqual(listed);
    expect(
      received
        .get(endpoint)!
        .types.filter((t) => t.endsWith('.deleted'))
        .sort(),
    ).toEqual(['customer.deleted', 'transaction.deleted', 'transaction.deleted']);

    // A transactions client starting from 0 after the rebuild gets the current rows and no deletion entry.
    const fresh = new Map<string, Row>();
    const freshSeen: Row[] = [];
    await sync(api, token, 'transactions', '0', fresh, freshSeen, 1);
    expect(fresh).toEqual(listed.transactions);
    expect(freshSeen.filter((r) => r.deleted === true)).toEqual([]);
  });
});
