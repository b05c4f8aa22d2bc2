import { jest } from '@jest/globals';
import fc from 'fast-check';
import { applyBatch } from '../../src/projection/apply-batch.js';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { drainFeed, erasureEvent, feedStepEvent, listAll, type Row } from '../utils/change-feed.js';
import { linkEvent, project, txEvent } from '../utils/events.js';

jest.setTimeout(180_000);

describe('change feed: changedAfter (e2e, real PostgreSQL)', () => {
  let db: TestDatabase;
  let api: TestApp;
  let token: string;

  beforeEach(async () => {
    db = await createTestDatabase('feed');
    api = await startTestApp({ databaseUrl: db.url });
    token = api.token('app-1');
  });
  afterEach(async () => {
    await api?.close();
    await db?.drop();
  });

  it('pages through every row in change order and hands out the cursor to keep', async () => {
    await project(db.dataSource, [
      txEvent({ time: '2024-01-01T00:00:00Z', data: { transactionId: 'apple:a', purchaseDate: '2024-01-01T00:00:00Z', applicationUsername: 'alice' } }),
      txEvent({ time: '2024-01-02T00:00:00Z', data: { transactionId: 'apple:b', purchaseDate: '2024-01-02T00:00:00Z', applicationUsername: 'bob' } }),
      txEvent({ app: 'app-2', time: '2024-01-02T00:00:00Z', data: { transactionId: 'apple:other', purchaseDate: '2024-01-02T00:00:00Z' } }),
    ]);
    const first = await api.get('/v2/transactions?changedAfter=0&limit=1', token);
    expect(first.status).toBe(200);
    expect(first.body.rows.map((r: Row) => r.transactionId)).toEqual(['apple:a']);
    expect(first.body.paging).toEqual({ skip: 0, limit: 1, total: 2, next: expect.any(String) });
    const second = await api.get(`/v2/transactions?changedAfter=${first.body.paging.next}&limit=1`, token);
    expect(second.body.rows.map((r: Row) => r.transactionId)).toEqual(['apple:b']);
    const empty = await api.get(`/v2/transactions?changedAfter=${second.body.paging.next}`, token);
    expect(empty.body.rows).toEqual([]);
    expect(empty.body.paging.next).toBe(second.body.paging.next);

    const customers = new Map<string, Row>();
    await drainFeed(api, token, 'customers', '0', customers);
    expect([...customers.keys()].sort()).toEqual(['alice', 'bob']);
  });

  it('shows an old row again when it changes (a refund), and not when a write changes nothing it shows', async () => {
    await project(db.dataSource, [
      txEvent({
        time: '2024-01-01T00:00:00Z',
        data: { transactionId: 'apple:old', purchaseDate: '2024-01-01T00:00:00Z', expirationDate: '2099-01-01T00:00:00Z', applicationUsername: 'alice' },
      }),
      txEvent({ time: '2024-01-02T00:00:00Z', data: { transactionId: 'apple:new', purchaseDate: '2024-01-02T00:00:00Z', applicationUsername: 'bob' } }),
    ]);
    const seen = { customers: new Map<string, Row>(), transactions: new Map<string, Row>() };
    let txCursor = await drainFeed(api, token, 'transactions', '0', seen.transactions);
    let customerCursor = await drainFeed(api, token, 'customers', '0', seen.customers);
    expect(seen.customers.get('alice')).toMatchObject({ customerInfo: { activeSubscriber: true } });

    // The same snapshot again under a new event id: merged, nothing shown changes.
    await project(db.dataSource, [
      txEvent({
        id: 'again',
        time: '2024-01-01T00:00:00Z',
        data: { transactionId: 'apple:old', purchaseDate: '2024-01-01T00:00:00Z', expirationDate: '2099-01-01T00:00:00Z', applicationUsername: 'alice' },
      }),
    ]);
    const after = { customers: new Map<string, Row>(), transactions: new Map<string, Row>() };
    txCursor = await drainFeed(api, token, 'transactions', txCursor, after.transactions);
    customerCursor = await drainFeed(api, token, 'customers', customerCursor, after.customers);
    expect(after.transactions.size + after.customers.size).toBe(0);

    await project(db.dataSource, [
      txEvent({
        time: '2024-02-01T00:00:00Z',
        data: {
          transactionId: 'apple:old',
          purchaseDate: '2024-01-01T00:00:00Z',
          expirationDate: '2099-01-01T00:00:00Z',
          applicationUsername: 'alice',
          isExpired: true,
          cancelationReason: 'Customer',
          revocationDate: '2024-02-01T00:00:00Z',
        },
      }),
    ]);
    await drainFeed(api, token, 'transactions', txCursor, after.transactions);
    await drainFeed(api, token, 'customers', customerCursor, after.customers);
    expect([...after.transactions.keys()]).toEqual(['apple:old']);
    expect(after.transactions.get('apple:old')).toMatchObject({ revocationDate: '2024-02-01T00:00:00.000Z' });
    expect([...after.customers.keys()]).toEqual(['alice']);
    expect(after.customers.get('alice')).toMatchObject({ customerInfo: { activeSubscriber: false } });
  });

  it('shows the customers a receipt moves between', async () => {
    await project(db.dataSource, [
      txEvent({
        time: '2024-01-01T00:00:00Z',
        data: { transactionId: 'apple:t', receiptId: 'apple:r', purchaseDate: '2024-01-01T00:00:00Z', applicationUsername: 'alice' },
      }),
    ]);
    const cursor = await drainFeed(api, token, 'customers', '0', new Map());
    await project(db.dataSource, [linkEvent({ time: '2024-01-05T00:00:00Z', receiptId: 'apple:r', user: 'bob' })]);
    const moved = new Map<string, Row>();
    await drainFeed(api, token, 'customers', cursor, moved);
    expect([...moved.keys()].sort()).toEqual(['alice', 'bob']);
    expect(moved.get('alice')).toMatchObject({ receiptIds: [] });
    expect(moved.get('bob')).toMatchObject({ receiptIds: ['apple:r'] });
  });

  it.each([
    ['/v2/transactions?changedAfter=0&skip=5', 'skip'],
    ['/v2/transactions?changedAfter=0&startdate=2024-01-01T00:00:00Z', 'startdate'],
    ['/v2/customers?changedAfter=0&applicationUsername=alice', 'applicationUsername'],
    ['/v2/customers?changedAfter=nonsense', 'changedAfter'],
    ['/v2/customers?changedAfter=0&changedAfter=0', 'changedAfter'],
    ['/v2/transactions?changedAfter=0&limit=5000', 'limit'],
  ])('%s is refused with 400 naming %s', async (path, parameter) => {
    const res = await api.get(path, token);
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toContain(parameter);
  });

  it('never skips a change that commits after a later-ordered one (high-water mark)', async () => {
    // Months and access ends apart: batches sharing a count row (a day's, an access-end day's, a
    // product's revenue month) commit in turn.
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let heldWritten!: () => void;
    const written = new Promise<void>((r) => (heldWritten = r));
    const held = applyBatch(
      db.dataSource,
      {
        topic: 'p',
        partition: 0,
        messages: [
          {
            offset: '0',
            key: null,
            value: Buffer.from(
              JSON.stringify(
                txEvent({
                  time: '2024-01-01T00:00:00Z',
                  data: {
                    transactionId: 'apple:held',
                    purchaseDate: '2024-01-01T00:00:00Z',
                    expirationDate: '2024-02-01T00:00:00Z',
                    applicationUsername: 'held',
                  },
                }),
              ),
            ),
          },
        ],
      },
      {
        beforeCommit: async () => {
          heldWritten();
          await gate;
        },
      },
    );
    await written;
    await applyBatch(db.dataSource, {
      topic: 'p',
      partition: 1,
      messages: [
        {
          offset: '0',
          key: null,
          value: Buffer.from(
            JSON.stringify(
              txEvent({
                time: '2024-02-02T00:00:00Z',
                data: {
                  transactionId: 'apple:later',
                  purchaseDate: '2024-02-02T00:00:00Z',
                  expirationDate: '2024-03-02T00:00:00Z',
                  applicationUsername: 'later',
                },
              }),
            ),
          ),
        },
      ],
    });
    // The later batch has committed, but a row ordered before it may still commit: nothing yet.
    const received = new Map<string, Row>();
    const cursor = await drainFeed(api, token, 'transactions', '0', received);
    expect([...received.keys()]).toEqual([]);
    release();
    await held;
    await drainFeed(api, token, 'transactions', cursor, received);
    expect([...received.keys()].sort()).toEqual(['apple:held', 'apple:later']);
  });

  it('property: whatever the interleaving of concurrent batches, erasures among them, a polling client ends with exactly the listed rows', async () => {
    const appEvents = fc.array(
      fc.record({
        tx: fc.integer({ min: 0, max: 11 }),
        user: fc.constantFrom('u0', 'u1', 'u2', 'u3', null),
        move: fc.boolean(),
        // an erasure of the user (one step in five): its deletion entry against the rows of concurrent batches
        erase: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
        expiresDay: fc.integer({ min: 1, max: 28 }),
        refunded: fc.boolean(),
        partition: fc.integer({ min: 0, max: 3 }),
        holdMs: fc.integer({ min: 0, max: 30 }),
      }),
      { minLength: 4, maxLength: 40 },
    );
    let round = 0;
    await fc.assert(
      fc.asyncProperty(appEvents, async (steps) => {
        const app = `prop-${round++}`;
        const appToken = api.token(app);
        const offsets = [0, 0, 0, 0];
        // Partitions commit concurrently, each in offset order, holding its transaction open a while.
        const partitions: Promise<unknown>[] = [Promise.resolve(), Promise.resolve(), Promise.resolve(), Promise.resolve()];
        const seen = { customers: new Map<string, Row>(), transactions: new Map<string, Row>() };
        const cursors = { customers: '0', transactions: '0' };
        let polling = true;
        const poller = (async () => {
          while (polling) {
            cursors.customers = await drainFeed(api, appToken, 'customers', cursors.customers, seen.customers, 3);
            cursors.transactions = await drainFeed(api, appToken, 'transactions', cursors.transactions, seen.transactions, 3);
          }
        })();
        steps.forEach((s, i) => {
          const event =
            s.erase && s.user ? erasureEvent(app, s.user, `2024-02-${String((i % 28) + 1).padStart(2, '0')}T12:00:00Z`) : feedStepEvent(app, i, s, s.move, 4);
          const offset = offsets[s.partition]++;
          partitions[s.partition] = partitions[s.partition].then(() =>
            applyBatch(
              db.dataSource,
              { topic: app, partition: s.partition, messages: [{ offset: String(offset), key: null, value: Buffer.from(JSON.stringify(event)) }] },
              { beforeCommit: () => new Promise((r) => setTimeout(r, s.holdMs)) },
            ),
          );
        });
        await Promise.all(partitions);
        polling = false;
        await poller;
        cursors.customers = await drainFeed(api, appToken, 'customers', cursors.customers, seen.customers);
        cursors.transactions = await drainFeed(api, appToken, 'transactions', cursors.transactions, seen.transactions);
        expect(seen.transactions).toEqual(await listAll(api, appToken, 'transactions'));
        expect(seen.customers).toEqual(await listAll(api, appToken, 'customers'));
      }),
      { numRuns: Number(process.env.FEED_RUNS ?? 15), seed: process.env.FEED_SEED ? Number(process.env.FEED_SEED) : undefined },
    );
  });
});
