import { jest } from '@jest/globals';
import fc from 'fast-check';
import { applyBatch } from '../../src/projection/apply-batch.js';
import { startTestApp, type TestApp } from '../utils/app.js';
import { drainFeed, erasureEvent, feedStepEvent, listAll, ROW_KEY, type Listing, type Row } from '../utils/change-feed.js';
import { expectEventually } from '../utils/expect-eventually.js';
import { linkEvent, project, txEvent } from '../utils/events.js';
import { createReplicatedDatabase, type ReplicatedDatabase } from '../utils/replicas.js';

// Real physical standbys (test/setup/replica-pair.mjs): the read endpoints served from a standby,
// lagging or paused, against the same API served from the primary. One file: pausing replay is
// cluster-wide, and two files pausing and waiting on the same standbys would wait on each other.
jest.setTimeout(180_000);

describe('read replicas (e2e, real PostgreSQL streaming standbys)', () => {
  let db: ReplicatedDatabase;
  let primary: TestApp;
  let replica1: TestApp;
  let replica2: TestApp;
  let both: TestApp;

  beforeEach(async () => {
    db = await createReplicatedDatabase('replicas');
    primary = await startTestApp({ databaseUrl: db.url });
    replica1 = await startTestApp({ databaseUrl: db.url, env: { DATABASE_READ_URL: db.standbyUrls[0] } });
    replica2 = await startTestApp({ databaseUrl: db.url, env: { DATABASE_READ_URL: db.standbyUrls[1] } });
    both = await startTestApp({ databaseUrl: db.url, env: { DATABASE_READ_URL: db.standbyUrls.join(',') } });
  });
  afterEach(async () => {
    for (const app of [primary, replica1, replica2, both]) await app?.close();
    await db?.drop();
  });

  const fixture = (app = 'app-1') => [
    txEvent({
      app,
      time: '2024-01-01T00:00:00Z',
      data: { transactionId: 'apple:a', purchaseDate: '2024-01-01T00:00:00Z', expirationDate: '2099-01-01T00:00:00Z', applicationUsername: 'alice' },
    }),
    txEvent({
      app,
      time: '2024-01-02T00:00:00Z',
      data: { transactionId: 'apple:b', purchaseDate: '2024-01-02T00:00:00Z', expirationDate: '2024-02-02T00:00:00Z', applicationUsername: 'bob' },
    }),
    txEvent({
      app,
      time: '2024-01-03T00:00:00Z',
      data: {
        transactionId: 'google:c',
        purchaseDate: '2024-01-03T00:00:00Z',
        applicationUsername: 'carol',
        isExpired: true,
        cancelationReason: 'Customer',
        revocationDate: '2024-01-10T00:00:00Z',
      },
    }),
    linkEvent({ app, time: '2024-01-04T00:00:00Z', receiptId: 'apple:r-apple:b', user: 'dave' }),
  ];

  it('answers every read the primary answers, the same, once caught up; behind, it answers the older state (read-your-writes)', async () => {
    await project(db.dataSource, fixture());
    await db.caughtUp();
    const token = primary.token('app-1');
    const paths = [
      '/v2/customers',
      '/v2/customers?skip=1&limit=2',
      '/v2/customers?applicationUsername=alice,dave,nobody',
      '/v2/customers?status=active&limit=0',
      '/v2/customers?renewalIntent=Renew',
      '/v2/customers?changedAfter=0&limit=2',
      '/v2/transactions',
      '/v2/transactions?skip=1&limit=1',
      '/v2/transactions?startdate=2024-01-02T00:00:00Z&enddate=2024-01-03T00:00:00Z',
      '/v2/transactions?purchaseId=apple:p-apple:a',
      '/v2/transactions?changedAfter=0&limit=2',
    ];
    for (const path of paths) {
      const expected = await primary.get(path, token);
      expect(expected.status).toBe(200);
      // A feed cursor records where the client began, each server's high-water mark: equal only when idle alike.
      if (expected.body.paging.next) expected.body.paging.next = expect.any(String);
      for (const app of [replica1, replica2, both, both]) expect({ path, ...(await app.get(path, token)).body }).toEqual({ path, ...expected.body });
    }

    // Reads really come from the standby: paused, it does not see a write the primary has.
    await db.pause(0);
    await project(db.dataSource, [
      txEvent({ time: '2024-01-05T00:00:00Z', data: { transactionId: 'apple:e', purchaseDate: '2024-01-05T00:00:00Z', applicationUsername: 'erin' } }),
    ]);
    expect((await primary.get('/v2/customers?limit=0', token)).body.paging.total).toBe(5);
    expect((await replica1.get('/v2/customers?limit=0', token)).body.paging.total).toBe(4);
    await db.resume(0);
    await db.caughtUp();
    expect((await replica1.get('/v2/customers?limit=0', token)).body.paging.total).toBe(5);
  });

  it('never skips a batch still committing on the primary: the high-water mark holds on a standby', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let heldWritten!: () => void;
    const written = new Promise<void>((r) => (heldWritten = r));
    // Different months, access ending on different days: sharing a day the later batch would wait for
    // the held one's count rows (the day counts; the customer counts by access-end day), sharing a
    // month for its revenue month (read_model.revenue_month_usd, per product and month).
    const batch = (partition: number, transactionId: string, user: string, day: string) => ({
      topic: 'p',
      partition,
      messages: [
        {
          offset: '0',
          key: null,
          value: Buffer.from(
            JSON.stringify(
              txEvent({
                time: `${day}T00:00:00Z`,
                data: { transactionId, purchaseDate: `${day}T00:00:00Z`, expirationDate: `${day}T12:00:00Z`, applicationUsername: user },
              }),
            ),
          ),
        },
      ],
    });
    const held = applyBatch(db.dataSource, batch(0, 'apple:held', 'held', '2024-01-01'), {
      beforeCommit: async () => {
        heldWritten();
        await gate;
      },
    });
    await written;
    await applyBatch(db.dataSource, batch(1, 'apple:later', 'later', '2024-02-02'));
    // The standby has replayed the later batch's commit while the held one is still open there too.
    await db.caughtUp();
    const token = replica1.token('app-1');
    const received = { transactions: new Map<string, Row>(), customers: new Map<string, Row>() };
    const cursors = {
      transactions: await drainFeed(replica1, token, 'transactions', '0', received.transactions),
      customers: await drainFeed(replica1, token, 'customers', '0', received.customers),
    };
    expect([...received.transactions.keys(), ...received.customers.keys()]).toEqual([]);
    release();
    await held;
    await db.caughtUp();
    await drainFeed(replica1, token, 'transactions', cursors.transactions, received.transactions);
    await drainFeed(replica1, token, 'customers', cursors.customers, received.customers);
    expect([...received.transactions.keys()].sort()).toEqual(['apple:held', 'apple:later']);
    expect([...received.customers.keys()].sort()).toEqual(['held', 'later']);
  });

  it('a cursor from the primary on a standby further behind: empty pages with the same cursor until it catches up, never a customer erased since', async () => {
    // Two batches: alice's row comes after bob's in change order, past the cursor the client will hold.
    await project(db.dataSource, [
      txEvent({ time: '2024-01-01T00:00:00Z', data: { transactionId: 'apple:b', purchaseDate: '2024-01-01T00:00:00Z', applicationUsername: 'bob' } }),
    ]);
    await project(db.dataSource, [
      txEvent({ time: '2024-01-02T00:00:00Z', data: { transactionId: 'apple:a', purchaseDate: '2024-01-02T00:00:00Z', applicationUsername: 'alice' } }),
    ]);
    await db.caughtUp();
    await db.pause(0);
    await project(db.dataSource, [erasureEvent('app-1', 'alice', '2024-01-03T00:00:00Z')]);
    const token = primary.token('app-1');
    // Began on the primary after the erasure: bob only, and alice is never to be named to it.
    const first = await primary.get('/v2/customers?changedAfter=0&limit=1', token);
    expect(first.body.rows.map((r: Row) => r.applicationUsername)).toEqual(['bob']);
    const behind = await replica1.get(`/v2/customers?changedAfter=${first.body.paging.next}&limit=10`, token);
    expect(behind.body).toEqual({ rows: [], paging: { skip: 0, limit: 10, total: 2, next: first.body.paging.next } });
    await db.resume(0);
    await db.caughtUp();
    const copy = new Map<string, Row>([['bob', first.body.rows[0]]]);
    await drainFeed(replica1, token, 'customers', first.body.paging.next, copy);
    expect(copy).toEqual(await listAll(primary, token, 'customers'));
    expect([...copy.keys()]).toEqual(['bob']);
  });

  it('reports each replica’s lag, and past DATABASE_READ_MAX_LAG takes it out of rotation and fails readiness, reads going to the primary', async () => {
    const bounded = await startTestApp({ databaseUrl: db.url, env: { DATABASE_READ_URL: db.standbyUrls[0], DATABASE_READ_MAX_LAG: '1s' } });
    try {
      const token = bounded.token('app-1');
      await project(db.dataSource, fixture());
      await db.caughtUp();
      await expectEventually(async () => expect((await bounded.get('/health/ready')).status).toBe(200));
      await db.pause(0);
      await project(db.dataSource, [
        txEvent({ time: '2024-01-05T00:00:00Z', data: { transactionId: 'apple:e', purchaseDate: '2024-01-05T00:00:00Z', applicationUsername: 'erin' } }),
      ]);
      await expectEventually(async () => {
        const ready = await bounded.get('/health/ready');
        expect(ready.status).toBe(503);
        expect(ready.body.checks.details.replicas).toMatchObject({
          status: 'down',
          replicas: [{ replica: 1, inRotation: false, lagSeconds: expect.any(Number) }],
        });
        expect(ready.body.checks.details.replicas.replicas[0].lagSeconds).toBeGreaterThan(1);
        const metrics = (await bounded.get('/metrics')).body as string;
        expect(Number(/subscription_records_database_replica_lag_seconds\{replica="1"\} (\S+)/.exec(metrics)?.[1])).toBeGreaterThan(1);
        expect(metrics).toContain('subscription_records_database_replica_in_rotation{replica="1"} 0');
      });
      // Out of rotation, the instance answers from the primary: right, and up to date.
      expect((await bounded.get('/v2/customers?limit=0', token)).body.paging.total).toBe(5);
      await db.resume(0);
      await expectEventually(async () => {
        expect((await bounded.get('/health/ready')).status).toBe(200);
        expect((await bounded.get('/metrics')).body).toContain('subscription_records_database_replica_in_rotation{replica="1"} 1');
      });
    } finally {
      await bounded.close();
    }
  });

  it('property: a client moving between the primary and two standbys, paused and resumed at random while batches commit concurrently, ends with exactly the listed rows', async () => {
    const step = fc.record({
      tx: fc.integer({ min: 0, max: 9 }),
      user: fc.constantFrom('u0', 'u1', 'u2', 'u3', null),
      kind: fc.constantFrom('tx', 'tx', 'tx', 'move', 'erase'),
      expiresDay: fc.integer({ min: 1, max: 28 }),
      refunded: fc.boolean(),
      partition: fc.integer({ min: 0, max: 2 }),
      holdMs: fc.integer({ min: 0, max: 20 }),
      replay: fc.constantFrom(undefined, undefined, 'pause', 'resume'),
      standby: fc.integer({ min: 0, max: 1 }),
    });
    const history = fc.record({
      steps: fc.array(step, { minLength: 4, maxLength: 30 }),
      route: fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 16, maxLength: 16 }),
    });
    let round = 0;
    await fc.assert(
      fc.asyncProperty(history, async ({ steps, route }) => {
        const app = `prop-${round++}`;
        const apis = [primary, replica1, replica2, both];
        const token = primary.token(app);
        let page = 0;
        // Each page from the next server on the route: a client behind a load balancer over all of them.
        const read = async (listing: Listing, cursor: string, into: Map<string, Row>) => {
          const api = apis[route[page++ % route.length]];
          const res = await api.get(`/v2/${listing}?changedAfter=${encodeURIComponent(cursor)}&limit=3`, token);
          if (res.status !== 200) throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
          for (const row of res.body.rows as Row[]) {
            const key = row[ROW_KEY[listing]] as string;
            if (row.deleted) into.delete(key);
            else into.set(key, row);
          }
          return { next: res.body.paging.next as string, rows: res.body.rows.length as number };
        };
        const seen = { customers: new Map<string, Row>(), transactions: new Map<string, Row>() };
        const cursors = { customers: '0', transactions: '0' };
        let polling = true;
        const poller = (async () => {
          while (polling) {
            for (const listing of ['customers', 'transactions'] as const) cursors[listing] = (await read(listing, cursors[listing], seen[listing])).next;
          }
        })();
        const offsets = [0, 0, 0];
        const partitions: Promise<unknown>[] = [Promise.resolve(), Promise.resolve(), Promise.resolve()];
        steps.forEach((s, i) => {
          const event =
            s.kind === 'erase' && s.user
              ? erasureEvent(app, s.user, `2024-02-${String((i % 28) + 1).padStart(2, '0')}T12:00:00Z`)
              : feedStepEvent(app, i, s, s.kind === 'move', 3);
          const offset = offsets[s.partition]++;
          partitions[s.partition] = partitions[s.partition].then(async () => {
            if (s.replay === 'pause') await db.pause(s.standby);
            if (s.replay === 'resume') await db.resume(s.standby);
            await applyBatch(
              db.dataSource,
              { topic: app, partition: s.partition, messages: [{ offset: String(offset), key: null, value: Buffer.from(JSON.stringify(event)) }] },
              { beforeCommit: () => new Promise((r) => setTimeout(r, s.holdMs)) },
            );
          });
        });
        await Promise.all(partitions);
        polling = false;
        await poller;
        await db.resume(0);
        await db.resume(1);
        await db.caughtUp();
        // Drained wherever the route goes: every server now stands where the primary does.
        for (const listing of ['customers', 'transactions'] as const) {
          for (let r = await read(listing, cursors[listing], seen[listing]); r.rows > 0;) r = await read(listing, r.next, seen[listing]);
        }
        expect(seen.transactions).toEqual(await listAll(primary, token, 'transactions'));
        expect(seen.customers).toEqual(await listAll(primary, token, 'customers'));
      }),
      // No shrinking: each shrunk run may wait out a pause's 30 s, and the test's timeout would hide the failure.
      {
        numRuns: Number(process.env.REPLICA_FEED_RUNS ?? 8),
        seed: process.env.REPLICA_FEED_SEED ? Number(process.env.REPLICA_FEED_SEED) : undefined,
        endOnFailure: true,
      },
    );
  });
});
