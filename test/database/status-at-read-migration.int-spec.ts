import { StatusAtRead1766100000000 } from '../../src/database/migrations/1766100000000-status-at-read.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { linkEvent, project, txEvent } from '../utils/events.js';

// Migration StatusAtRead1766100000000 on a database that holds customers: undone (down), it places
// them by their status at its own instant as the counts by status did; done again (up), the counts
// and the watermarks are gone and nothing else changed.

const at = (time: string) => `2026-${time}:00.000Z`;
const customers = (db: TestDatabase) => db.dataSource.query(`SELECT * FROM read_model.customers ORDER BY application_username`);

describe('migration StatusAtRead1766100000000 (real PostgreSQL)', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase('status_at_read_migration');
    await project(db.dataSource, [
      txEvent({
        time: at('03-01T10:00'),
        data: {
          transactionId: 'apple:1',
          receiptId: 'apple:r1',
          productId: 'apple:monthly',
          applicationUsername: 'ann',
          purchaseDate: at('03-01T10:00'),
          expirationDate: '2999-01-01T00:00:00.000Z',
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
      linkEvent({ time: at('03-04T10:00'), receiptId: 'apple:r-none', user: 'dee' }),
    ]);
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('down places the customers at its instant; up drops the counts by status and the watermarks, and leaves the rows', async () => {
    const before = await customers(db);
    const run = async (step: 'up' | 'down') => {
      const runner = db.dataSource.createQueryRunner();
      try {
        await runner.startTransaction();
        await new StatusAtRead1766100000000()[step](runner);
        await runner.commitTransaction();
      } finally {
        await runner.release();
      }
    };
    await run('down');
    expect(
      await db.dataSource.query(`SELECT app_id, first_day::text, status, product_id, renewal_intent, n::int FROM read_model.customer_status_days ORDER BY 2`),
    ).toEqual([
      { app_id: 'app-1', first_day: '2026-03-01', status: 'active', product_id: 'apple:monthly', renewal_intent: '', n: 1 },
      { app_id: 'app-1', first_day: '2026-03-02', status: 'expired', product_id: 'apple:monthly', renewal_intent: 'Lapse', n: 1 },
      { app_id: 'app-1', first_day: '2026-03-04', status: 'none', product_id: '', renewal_intent: '', n: 1 },
    ]);
    expect(await db.dataSource.query(`SELECT app_id FROM read_model.customer_status_watermarks`)).toEqual([{ app_id: 'app-1' }]);
    await run('up');
    expect(
      await db.dataSource.query(`SELECT to_regclass('read_model.customer_status_days') AS d, to_regclass('read_model.customer_status_watermarks') AS w`),
    ).toEqual([{ d: null, w: null }]);
    expect(await customers(db)).toEqual(before);
  });
});
