import { TransactionFilterCounts1765700000000 } from '../../src/database/migrations/1765700000000-transaction-filter-counts.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { project, txEvent } from '../utils/events.js';

// Migration TransactionFilterCounts1765700000000 on a database that already holds transactions:
// undone (down) and done again (up), its backfill gives the counts the projection keeps.

const at = (time: string) => `2026-${time}:00.000Z`;

describe('migration TransactionFilterCounts1765700000000 (real PostgreSQL)', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase('filter_counts_migration');
    await project(db.dataSource, [
      txEvent({ time: at('03-01T10:00'), data: { transactionId: 'apple:1', productId: 'apple:monthly', purchaseDate: at('03-01T10:00'), sandbox: false } }),
      txEvent({ time: at('03-01T23:59'), data: { transactionId: 'apple:2', productId: 'apple:monthly', purchaseDate: at('03-01T23:59') } }),
      txEvent({ time: at('03-02T00:00'), data: { transactionId: 'apple:3', productId: 'apple:yearly', purchaseDate: at('03-02T00:00'), sandbox: true } }),
      txEvent({ time: at('03-02T08:00'), data: { transactionId: 'google:GPA.1', productId: 'google:basic', purchaseDate: at('03-02T08:00') } }),
      txEvent({ app: 'other', time: at('03-02T09:00'), data: { transactionId: 'apple:1', productId: 'apple:monthly', purchaseDate: at('03-02T09:00') } }),
    ]);
  });

  afterAll(async () => {
    await db?.drop();
  });

  const counts = () =>
    db.dataSource.query(`SELECT app_id, product_id, platform, sandbox, day::text, n::int FROM read_model.transaction_filter_day_counts ORDER BY 1, 2, 3, 4, 5`);

  it('counts the stored transactions as the projection counts them, and gives the page index platform and sandbox', async () => {
    const projected = await counts();
    // written out, so the comparison below is not between two empty sets
    expect(projected).toEqual([
      { app_id: 'app-1', product_id: 'apple:monthly', platform: 'apple', sandbox: false, day: '2026-03-01', n: 2 },
      { app_id: 'app-1', product_id: 'apple:yearly', platform: 'apple', sandbox: true, day: '2026-03-02', n: 1 },
      { app_id: 'app-1', product_id: 'google:basic', platform: 'google', sandbox: false, day: '2026-03-02', n: 1 },
      { app_id: 'other', product_id: 'apple:monthly', platform: 'apple', sandbox: false, day: '2026-03-02', n: 1 },
    ]);
    const pageIndex = async () => (await db.dataSource.query(`SELECT indexdef FROM pg_indexes WHERE indexname = 'transactions_page_idx'`))[0].indexdef;
    const runner = db.dataSource.createQueryRunner();
    try {
      await runner.startTransaction();
      await new TransactionFilterCounts1765700000000().down(runner);
      expect(await runner.query(`SELECT to_regclass('read_model.transaction_filter_day_counts') AS t`)).toEqual([{ t: null }]);
      expect(await runner.query(`SELECT indexdef FROM pg_indexes WHERE indexname = 'transactions_page_idx'`)).toEqual([
        { indexdef: 'CREATE INDEX transactions_page_idx ON read_model.transactions USING btree (app_id, occurred_at, transaction_id)' },
      ]);
      await new TransactionFilterCounts1765700000000().up(runner);
      await runner.commitTransaction();
    } finally {
      await runner.release();
    }
    expect(await counts()).toEqual(projected);
    expect(await pageIndex()).toContain('INCLUDE (platform, sandbox)');
  });
});
