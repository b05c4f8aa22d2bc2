import { CustomerFilterCounts1765800000000 } from '../../src/database/migrations/1765800000000-customer-filter-counts.js';
import { CustomerEndWeeks1766000000000 } from '../../src/database/migrations/1766000000000-customer-end-weeks.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { linkEvent, project, txEvent } from '../utils/events.js';
import { expectCellsKept } from '../utils/read-models.js';

// Migration CustomerFilterCounts1765800000000 on a database that already holds customers: undone
// (down) and done again (up), its backfill gives the counts the projection kept until
// CustomerEndWeeks1766000000000 replaced them (undone first here, and done again after).

const at = (time: string) => `2026-${time}:00.000Z`;

describe('migration CustomerFilterCounts1765800000000 (real PostgreSQL)', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase('customer_counts_migration');
    await project(db.dataSource, [
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
          renewalIntent: 'Lapse',
        },
      }),
      txEvent({
        time: at('03-03T10:00'),
        data: {
          transactionId: 'google:GPA.1',
          receiptId: 'google:r3',
          productId: 'google:yearly',
          applicationUsername: 'cy',
          purchaseDate: at('03-03T10:00'),
          expirationDate: at('09-01T00:00'),
        },
      }),
      linkEvent({ time: at('03-04T10:00'), receiptId: 'apple:r-none', user: 'dee' }),
    ]);
  });

  afterAll(async () => {
    await db?.drop();
  });

  const counts = (runner: { query: (sql: string) => Promise<unknown> }) =>
    runner.query(
      `SELECT app_id, end_day::text, product_id, renewal_intent, grace_day::text, billing_retry, n::int FROM read_model.customer_filter_counts ORDER BY 1, 2, 3, 4, 5, 6`,
    );

  it('counts the stored customers as the projection counts them, and indexes grace starts', async () => {
    const runner = db.dataSource.createQueryRunner();
    try {
      await runner.startTransaction();
      // the later migration's down gives these counts back, summed over first-seen weeks
      await new CustomerEndWeeks1766000000000().down(runner);
      const projected = await counts(runner);
      // written out, so the comparison below is not between two empty sets
      expect(projected).toEqual([
        { app_id: 'app-1', end_day: '-infinity', product_id: '', renewal_intent: '', grace_day: 'infinity', billing_retry: false, n: 1 },
        // ann's event says no renewal intent (docs/api.md: the intent is the current transaction's)
        { app_id: 'app-1', end_day: '2026-04-01', product_id: 'apple:monthly', renewal_intent: '', grace_day: 'infinity', billing_retry: false, n: 1 },
        { app_id: 'app-1', end_day: '2026-04-01', product_id: 'apple:monthly', renewal_intent: 'Lapse', grace_day: 'infinity', billing_retry: false, n: 1 },
        { app_id: 'app-1', end_day: '2026-09-01', product_id: 'google:yearly', renewal_intent: '', grace_day: 'infinity', billing_retry: false, n: 1 },
      ]);
      await new CustomerFilterCounts1765800000000().down(runner);
      expect(await runner.query(`SELECT to_regclass('read_model.customer_filter_counts') AS t, to_regclass('read_model.customers_grace_idx') AS i`)).toEqual([
        { t: null, i: null },
      ]);
      await new CustomerFilterCounts1765800000000().up(runner);
      expect(await counts(runner)).toEqual(projected);
      await new CustomerEndWeeks1766000000000().up(runner);
      await runner.commitTransaction();
    } finally {
      await runner.release();
    }
    await expectCellsKept(db.dataSource);
    const [{ indexdef }] = await db.dataSource.query(`SELECT indexdef FROM pg_indexes WHERE indexname = 'customers_grace_idx'`);
    expect(indexdef).toBe('CREATE INDEX customers_grace_idx ON read_model.customers USING btree (app_id, grace_from) WHERE (grace_from IS NOT NULL)');
  });
});
