import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { project } from '../utils/events.js';
import { prng, scenarioEvents } from '../utils/scenario.js';
import { startTestApp, type TestApp } from '../utils/app.js';

// Totals and deep pages come from the per-day counts; here they must agree with the obvious
// count(*) and OFFSET over the same rows, for random ranges (cutting days at any millisecond) and skips.
describe('paging through the day-count index equals brute-force SQL (e2e)', () => {
  let db: TestDatabase;
  let api: TestApp;
  const rnd = prng(2024);

  beforeAll(async () => {
    db = await createTestDatabase('paging');
    api = await startTestApp({ databaseUrl: db.url });
    await project(db.dataSource, scenarioEvents({ seed: 81, customers: 400, apps: ['app-1'] }));
    await project(db.dataSource, scenarioEvents({ seed: 82, customers: 100, apps: ['app-1'], tag: 'late' }));
  });
  afterAll(async () => {
    await api?.close();
    await db?.drop();
  });

  const randomInstant = () => new Date(Date.UTC(2025, 0, 1) + Math.floor(rnd() * 500 * 86_400_000));

  it('transactions: totals and pages for random date ranges and skips', async () => {
    const token = api.token('app-1');
    for (let i = 0; i < 40; i++) {
      const [a, b] = [randomInstant(), randomInstant()].sort((x, y) => x.getTime() - y.getTime());
      const filters: string[] = [];
      const params: unknown[] = ['app-1'];
      let where = 'app_id = $1';
      if (i % 4 !== 0) {
        filters.push(`startdate=${a.toISOString()}`);
        params.push(a);
        where += ` AND occurred_at >= $${params.length}`;
      }
      if (i % 3 !== 0) {
        filters.push(`enddate=${b.toISOString()}`);
        params.push(b);
        where += ` AND occurred_at < $${params.length}`;
      }
      const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM read_model.transactions WHERE ${where}`, params);
      const skip = Math.floor(rnd() * (n + 5));
      const limit = 1 + Math.floor(rnd() * 30);
      const expected = await db.dataSource.query(
        `SELECT transaction_id FROM read_model.transactions WHERE ${where} ORDER BY occurred_at, transaction_id OFFSET ${skip} LIMIT ${limit}`,
        params,
      );
      const res = await api.get(`/v2/transactions?${[...filters, `skip=${skip}`, `limit=${limit}`].join('&')}`, token);
      expect(res.body.paging).toEqual({ skip, limit, total: n });
      expect(res.body.rows.map((r: { transactionId: string }) => r.transactionId)).toEqual(expected.map((r: { transaction_id: string }) => r.transaction_id));
    }
  });

  it('customers: totals and pages for random skips', async () => {
    const token = api.token('app-1');
    const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM read_model.customers WHERE app_id = 'app-1'`);
    for (let i = 0; i < 20; i++) {
      const skip = Math.floor(rnd() * (n + 5));
      const limit = 1 + Math.floor(rnd() * 40);
      const expected = await db.dataSource.query(
        `SELECT application_username FROM read_model.customers WHERE app_id = 'app-1' ORDER BY first_seen_at, application_username OFFSET ${skip} LIMIT ${limit}`,
      );
      const res = await api.get(`/v2/customers?skip=${skip}&limit=${limit}`, token);
      expect(res.body.paging).toEqual({ skip, limit, total: n });
      expect(res.body.rows.map((r: { applicationUsername: string }) => r.applicationUsername)).toEqual(
        expected.map((r: { application_username: string }) => r.application_username),
      );
    }
  });

  it('summaries kept on customers count the transactions and list the receipts they own now', async () => {
    // what the summary says of those transactions is the reference model's to check (test/model)
    const drift = await db.dataSource.query(`
      SELECT c.application_username FROM read_model.customers c
      LEFT JOIN LATERAL (
        SELECT count(t.*)::int AS n FROM read_model.receipts r JOIN read_model.transactions t ON t.app_id = r.app_id AND t.receipt_id = r.receipt_id
        WHERE r.app_id = c.app_id AND r.application_username = c.application_username) x ON true
      LEFT JOIN LATERAL (
        SELECT coalesce(array_agg(r.receipt_id ORDER BY r.receipt_id), '{}') AS ids FROM read_model.receipts r
        WHERE r.app_id = c.app_id AND r.application_username = c.application_username) y ON true
      WHERE c.transaction_count <> x.n OR c.receipt_ids <> y.ids`);
    expect(drift).toEqual([]);
  });
});
