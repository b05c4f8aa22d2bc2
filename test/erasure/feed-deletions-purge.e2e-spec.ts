import { jest } from '@jest/globals';
import { KEEP_FEED_DELETIONS_MS } from '../../src/change-feed/feed-retention.js';
import { pruneDeliveries } from '../../src/webhooks/webhook-dispatcher.js';
import { feedDeletionsSql } from '../../src/change-feed/feed-deletions.sql.js';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { project, txEvent } from '../utils/events.js';

jest.setTimeout(120_000);

// Deletion entries name erased customers, so they are purged after 30 days (docs/change-feed.md,
// "Deletions"); a cursor that could have been shown a purged entry is refused (400 naming
// changedAfter) instead of silently keeping the deleted row; one whose client began after it is not.

const APP = 'purge-app';
const ANN = 'ann.purge@example.com';
const BEN = 'ben.purge@example.com';
const CY = 'cy.purge@example.com';
const DEE = 'dee.purge@example.com';
const day = (d: number) => new Date(Date.UTC(2026, 0, d)).toISOString();
const erasure = (user: string, d: number) => ({
  specversion: '1.0',
  id: `erase-${user}`,
  source: 'test',
  type: 'customer.erased',
  time: day(d),
  appid: APP,
  data: { applicationUsername: user },
});
const tx = (id: string, user: string, d: number) =>
  txEvent({
    app: APP,
    time: day(d),
    data: { transactionId: `apple:${id}`, receiptId: `apple:r-${id}`, purchaseId: `apple:p-${id}`, expirationDate: day(d + 30), applicationUsername: user },
  });

describe('purge of change-feed deletion entries (e2e: real PostgreSQL, the feed over HTTP)', () => {
  let db: TestDatabase;
  let api: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase('feed_purge');
    api = await startTestApp({ databaseUrl: db.url });
  });
  afterAll(async () => {
    await api?.close();
    await db?.drop();
  });

  const page = (cursor: string) => api.get(`/v2/customers?changedAfter=${encodeURIComponent(cursor)}&limit=1000`, api.token(APP));
  /** Reads to the end; the rows seen and the cursor to go on from. */
  async function sync(cursor: string): Promise<{ cursor: string; rows: { applicationUsername: string; deleted?: boolean }[] }> {
    const rows = [];
    for (;;) {
      const res = await page(cursor);
      expect(res.status).toBe(200);
      rows.push(...res.body.rows);
      cursor = res.body.paging.next;
      if (res.body.rows.length === 0) return { cursor, rows };
    }
  }

  it('given entries older than 30 days, when pruned, then they are gone, newer ones stay, and only cursors that could have been shown them are refused', async () => {
    await project(db.dataSource, [tx('a', ANN, 1), tx('b', BEN, 2), tx('c', CY, 3)]);
    const early = await sync('0'); // holds ann, ben and cy
    await project(db.dataSource, [erasure(ANN, 10)]);
    const middle = await sync('0'); // began after ann's erasure
    await project(db.dataSource, [erasure(BEN, 11)]);
    // ann's entry is 31 days old, ben's is new
    await db.dataSource.query(`UPDATE public.feed_deletions SET deleted_at = now() - interval '31 days' WHERE row_key = $1`, [ANN]);
    expect((await page(early.cursor)).status).toBe(200);

    await pruneDeliveries(db.dataSource);
    expect(
      (await db.dataSource.query(`SELECT row_key FROM public.feed_deletions WHERE app_id = $1 ORDER BY row_key`, [APP])).map(
        (r: { row_key: string }) => r.row_key,
      ),
    ).toEqual([BEN]);

    const refused = await page(early.cursor);
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({
      code: 'invalid_parameter',
      parameter: 'changedAfter',
      detail: expect.stringContaining('restart from changedAfter=0'),
    });
    // began after ann's erasure: never to be shown her entry, still served, and told of ben's
    const after = await sync(middle.cursor);
    expect(after.rows).toEqual([{ applicationUsername: BEN, customerInfo: {}, receiptIds: [], deleted: true }]);
    // a client that restarts from 0 gets the current rows and no name of the erased
    const restarted = await sync('0');
    expect(restarted.rows.map((r) => r.applicationUsername)).toEqual([CY]);
    // pruning again changes nothing
    await pruneDeliveries(db.dataSource);
    expect((await page(after.cursor)).status).toBe(200);
  });

  it('given a purge that commits while a page is being read, then the cursor is refused, never served that page without the purged entry', async () => {
    await project(db.dataSource, [tx('d', DEE, 4)]);
    const client = await sync('0'); // holds dee
    await project(db.dataSource, [erasure(DEE, 12)]);
    await db.dataSource.query(`UPDATE public.feed_deletions SET deleted_at = now() - interval '31 days' WHERE row_key = $1`, [DEE]);

    // The service's purge, in a transaction that first locks the entries' table, so the page read
    // waits on it and runs once the purge has committed.
    const purge = db.dataSource.createQueryRunner();
    await purge.connect();
    try {
      await purge.startTransaction();
      await purge.query('LOCK TABLE public.feed_deletions IN ACCESS EXCLUSIVE MODE');
      await purge.query(feedDeletionsSql.prune, [KEEP_FEED_DELETIONS_MS]);
      const answer = page(client.cursor);
      const waiting = `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%public.feed_deletions d%' AND query LIKE '%read_model.customers%'`;
      for (let i = 0; (await db.dataSource.query(waiting))[0].n === 0; i++) {
        if (i === 500) throw new Error('the page read never waited on the purge');
        await new Promise((r) => setTimeout(r, 20));
      }
      await purge.commitTransaction();
      const refused = await answer;
      expect({ status: refused.status, body: refused.body }).toMatchObject({
        status: 400,
        body: { parameter: 'changedAfter', detail: expect.stringContaining('restart from changedAfter=0') },
      });
    } finally {
      if (purge.isTransactionActive) await purge.rollbackTransaction();
      await purge.release();
    }
    expect((await db.dataSource.query(`SELECT count(*)::int AS n FROM public.feed_deletions WHERE row_key = $1`, [DEE]))[0].n).toBe(0);
  });
});
