import { CustomerStatus1765300000000 } from '../../src/database/migrations/1765300000000-customer-status.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { linkEvent, project, txEvent } from '../utils/events.js';

// Migration CustomerStatus1765300000000 on a database that already holds customers: undone (down)
// and done again (up), its frozen backfill gives the status columns the projection computes exactly,
// for the histories it is meant to cover (one current subscription per customer).

const T = (day: string) => `${day}T00:00:00.000Z`;

describe('migration CustomerStatus1765300000000 (real PostgreSQL)', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase('status_migration');
    await project(db.dataSource, [
      txEvent({
        time: T('2026-01-01'),
        data: {
          transactionId: 'apple:a1',
          receiptId: 'apple:ra',
          applicationUsername: 'ann',
          productId: 'apple:pro',
          purchaseDate: T('2026-10-01'),
          expirationDate: T('2026-11-01'),
        },
      }),
      txEvent({
        time: T('2026-01-02'),
        data: {
          transactionId: 'apple:b1',
          receiptId: 'apple:rb',
          applicationUsername: 'ben',
          productId: 'apple:pro',
          purchaseDate: T('2026-09-10'),
          expirationDate: T('2026-10-10'),
          isBillingRetryPeriod: true,
          gracePeriodExpirationDate: T('2026-10-26'),
        },
      }),
      txEvent({
        time: T('2026-01-03'),
        data: {
          transactionId: 'google:GPA.1',
          receiptId: 'google:tc',
          applicationUsername: 'cat',
          productId: 'google:basic',
          purchaseDate: T('2026-09-10'),
          expirationDate: T('2026-10-10'),
          isBillingRetryPeriod: true,
        },
      }),
      txEvent({
        time: T('2026-01-04'),
        data: {
          transactionId: 'apple:e1',
          receiptId: 'apple:re',
          applicationUsername: 'eve',
          productId: 'apple:yearly',
          purchaseDate: T('2026-01-05'),
          expirationDate: T('2027-01-05'),
          revocationDate: T('2026-10-05'),
          isExpired: true,
          isBillingRetryPeriod: true,
        },
      }),
      txEvent({
        time: T('2026-01-05'),
        data: {
          transactionId: 'apple:f1',
          receiptId: 'apple:rf',
          applicationUsername: 'fay',
          purchaseDate: T('2026-10-14'),
          expirationDate: T('2026-11-14'),
          isPending: true,
        },
      }),
      linkEvent({ time: T('2026-01-06'), receiptId: 'apple:rg', user: 'gil' }),
      // a renewal: the current subscription is the later transaction, of another product
      txEvent({
        time: T('2026-01-07'),
        data: {
          transactionId: 'apple:h1',
          receiptId: 'apple:rh',
          purchaseId: 'apple:h1',
          applicationUsername: 'hal',
          productId: 'apple:basic',
          purchaseDate: T('2026-08-01'),
          expirationDate: T('2026-09-01'),
        },
      }),
      txEvent({
        time: T('2026-09-01'),
        data: {
          transactionId: 'apple:h2',
          receiptId: 'apple:rh',
          purchaseId: 'apple:h1',
          productId: 'apple:pro',
          purchaseDate: T('2026-08-01'),
          lastRenewalDate: T('2026-09-01'),
          expirationDate: T('2026-10-01'),
        },
      }),
    ]);
  });

  afterAll(async () => {
    await db?.drop();
  });

  const statusColumns = () =>
    db.dataSource.query(
      `SELECT application_username AS name, current_product_id AS product, grace_from AS "graceFrom", billing_retry AS "billingRetry"
       FROM read_model.customers ORDER BY application_username`,
    );

  it('fills current_product_id, grace_from and billing_retry as the projection does, and creates the indexes', async () => {
    const projected = await statusColumns();
    // written out, so the comparison below is not between two empty sets
    expect(projected).toEqual([
      { name: 'ann', product: 'apple:pro', graceFrom: null, billingRetry: false },
      { name: 'ben', product: 'apple:pro', graceFrom: new Date(T('2026-10-10')), billingRetry: true },
      { name: 'cat', product: 'google:basic', graceFrom: null, billingRetry: true },
      { name: 'eve', product: 'apple:yearly', graceFrom: null, billingRetry: false },
      { name: 'fay', product: null, graceFrom: null, billingRetry: false },
      { name: 'gil', product: null, graceFrom: null, billingRetry: false },
      { name: 'hal', product: 'apple:pro', graceFrom: null, billingRetry: false },
    ]);
    const runner = db.dataSource.createQueryRunner();
    try {
      await runner.startTransaction();
      await new CustomerStatus1765300000000().down(runner);
      await new CustomerStatus1765300000000().up(runner);
      await runner.commitTransaction();
    } finally {
      await runner.release();
    }
    expect(await statusColumns()).toEqual(projected);
    const indexes = (await db.dataSource.query(`SELECT indexname FROM pg_indexes WHERE schemaname = 'read_model' AND indexname = ANY($1) ORDER BY 1`, [
      ['customers_access_end_idx', 'customers_product_idx', 'transactions_product_idx', 'transactions_purchase_idx'],
    ])) as { indexname: string }[];
    expect(indexes.map((i) => i.indexname)).toEqual([
      'customers_access_end_idx',
      'customers_product_idx',
      'transactions_product_idx',
      'transactions_purchase_idx',
    ]);
  });
});
