import { CustomerEndWeeks1766000000000 } from '../../src/database/migrations/1766000000000-customer-end-weeks.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { linkEvent, project, txEvent } from '../utils/events.js';
import { expectCellsKept } from '../utils/read-models.js';

// Migration CustomerEndWeeks1766000000000 on a database that already holds customers: undone (down:
// customer_filter_counts again, the same cells summed over weeks) and done again (up), its backfill
// counts them as the projection does, and the two indexes it widens carry the columns the expiry
// pages count on.

const at = (time: string) => `2026-${time}:00.000Z`;

describe('migration CustomerEndWeeks1766000000000 (real PostgreSQL)', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase('end_weeks_migration');
    await project(db.dataSource, [
      // first seen on a Sunday and the Monday after: two weeks
      txEvent({
        time: at('03-01T10:00'),
        data: {
          transactionId: 'apple:1',
          receiptId: 'apple:r1',
          productId: 'apple:monthly',
          applicationUsername: 'ann',
          purchaseDate: at('03-01T10:00'),
          expirationDate: at('04-01T23:30'),
        },
      }),
      txEvent({
        time: at('03-02T10:00'),
        data: {
          transactionId: 'apple:2',
          receiptId: 'apple:r2',
          productId: 'apple:monthly',
          applicationUsername: 'bob',
          purchaseDate: at('03-02T10:00'),
          expirationDate: at('04-01T10:00'),
        },
      }),
      linkEvent({ time: at('03-04T10:00'), receiptId: 'apple:r-none', user: 'dee' }),
    ]);
  });

  afterAll(async () => {
    await db?.drop();
  });

  const indexes = (on: { query: (sql: string) => Promise<unknown> } = db.dataSource) =>
    on.query(
      `SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'read_model' AND indexname IN ('customers_access_end_idx', 'customers_page_idx') ORDER BY 1`,
    );

  it('counts the stored customers per access-end day, first-seen week and filtered values, down and up again', async () => {
    const runner = db.dataSource.createQueryRunner();
    try {
      await runner.startTransaction();
      await new CustomerEndWeeks1766000000000().down(runner);
      expect(await runner.query(`SELECT to_regclass('read_model.customer_end_weeks') AS t`)).toEqual([{ t: null }]);
      expect(await runner.query(`SELECT end_day::text, product_id, n::int FROM read_model.customer_filter_counts ORDER BY 1`)).toEqual([
        { end_day: '-infinity', product_id: '', n: 1 },
        { end_day: '2026-04-01', product_id: 'apple:monthly', n: 2 },
      ]);
      expect(((await indexes(runner)) as { indexdef: string }[]).map((i) => i.indexdef.includes('INCLUDE'))).toEqual([false, false]);
      await new CustomerEndWeeks1766000000000().up(runner);
      await runner.commitTransaction();
    } finally {
      await runner.release();
    }
    const cell = { app_id: 'app-1', product_id: 'apple:monthly', renewal_intent: '', grace_day: 'infinity', billing_retry: false, n: 1 };
    expect(await expectCellsKept(db.dataSource)).toEqual([
      { ...cell, end_day: '-infinity', first_week: '2026-03-02', product_id: '' },
      { ...cell, end_day: '2026-04-01', first_week: '2026-02-23' },
      { ...cell, end_day: '2026-04-01', first_week: '2026-03-02' },
    ]);
    expect(await db.dataSource.query(`SELECT to_regclass('read_model.customer_filter_counts') AS t`)).toEqual([{ t: null }]);
    expect(((await indexes()) as { indexdef: string }[]).map((i) => /INCLUDE \((\w+)\)/.exec(i.indexdef)?.[1])).toEqual(['first_seen_at', 'expiration_date']);
  });
});
