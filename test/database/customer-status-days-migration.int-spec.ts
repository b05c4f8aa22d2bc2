import { CustomerStatusDays1765900000000 } from '../../src/database/migrations/1765900000000-customer-status-days.js';
import { sweepStatuses } from '../../src/projection/sweep-statuses.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { linkEvent, project, txEvent } from '../utils/events.js';
import { expectStatusDaysKept } from '../utils/read-models.js';

// Migration CustomerStatusDays1765900000000 on a database that already holds customers: undone
// (down) and done again (up), its backfill places them as the projection does, and a sweep moves
// them to the statuses of another instant.

const at = (time: string) => `2026-${time}:00.000Z`;

describe('migration CustomerStatusDays1765900000000 (real PostgreSQL)', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase('status_days_migration');
    await project(db.dataSource, [
      txEvent({ time: at('03-01T10:00'), data: { transactionId: 'apple:1', receiptId: 'apple:r1', productId: 'apple:monthly', applicationUsername: 'ann', purchaseDate: at('03-01T10:00'), expirationDate: at('04-01T23:30') } }),
      txEvent({ time: at('03-02T10:00'), data: { transactionId: 'apple:2', receiptId: 'apple:r2', productId: 'apple:monthly', applicationUsername: 'bob', purchaseDate: at('03-02T10:00'), expirationDate: at('04-01T10:00'), renewalIntent: 'Lapse' } }),
      txEvent({ time: at('03-03T10:00'), data: { transactionId: 'google:GPA.1', receiptId: 'google:r3', productId: 'google:yearly', applicationUsername: 'cy', purchaseDate: at('03-03T10:00'), expirationDate: at('09-01T00:00') } }),
      linkEvent({ time: at('03-04T10:00'), receiptId: 'apple:r-none', user: 'dee' }),
    ]);
  });

  afterAll(async () => {
    await db?.drop();
  });

  const days = () => db.dataSource.query(`SELECT app_id, first_day::text, status, product_id, renewal_intent, n::int FROM read_model.customer_status_days ORDER BY 1, 2, 3`);

  it('places the stored customers at the watermark it sets, and a sweep moves them to another instant', async () => {
    await expectStatusDaysKept(db.dataSource);
    const runner = db.dataSource.createQueryRunner();
    try {
      await runner.startTransaction();
      await new CustomerStatusDays1765900000000().down(runner);
      expect(await runner.query(`SELECT to_regclass('read_model.customer_status_days') AS d, to_regclass('read_model.customer_status_watermarks') AS w`)).toEqual([{ d: null, w: null }]);
      await new CustomerStatusDays1765900000000().up(runner);
      await runner.commitTransaction();
    } finally {
      await runner.release();
    }
    await expectStatusDaysKept(db.dataSource);
    // 2026-04-01 noon: bob's access ended at 10:00, ann's ends at 23:30, cy's in September; dee never subscribed
    expect(await sweepStatuses(db.dataSource, new Date(at('04-01T12:00')))).toBeGreaterThan(0);
    await expectStatusDaysKept(db.dataSource);
    expect(await days()).toEqual([
      { app_id: 'app-1', first_day: '2026-03-01', status: 'active', product_id: 'apple:monthly', renewal_intent: '', n: 1 },
      { app_id: 'app-1', first_day: '2026-03-02', status: 'expired', product_id: 'apple:monthly', renewal_intent: 'Lapse', n: 1 },
      { app_id: 'app-1', first_day: '2026-03-03', status: 'active', product_id: 'google:yearly', renewal_intent: '', n: 1 },
      { app_id: 'app-1', first_day: '2026-03-04', status: 'none', product_id: '', renewal_intent: '', n: 1 },
    ]);
    // the next day: ann's access has ended too
    await sweepStatuses(db.dataSource, new Date(at('04-02T00:00')));
    expect((await days()).map((d: { status: string }) => d.status)).toEqual(['expired', 'expired', 'active', 'none']);
  });
});
