import { DataSource } from 'typeorm';
import { dataSourceOptions, MIGRATIONS } from '../../src/database/data-source-options.js';
import { runMigrations } from '../../src/database/migrate.js';
import { adminQuery as adminQueryOn } from '../utils/database.js';

// A database written by the previous release (migrations up to CountsAndSummaries, its old rules:
// rows filed at purchaseDate, summaries over max expirationDate), upgraded by LifecycleRules.

const admin = () => process.env.TEST_ADMIN_DATABASE_URL!;
const name = `sr_upgrade_${process.env.TEST_RUN_ID}_${process.pid}`;

const adminQuery = (sql: string) => adminQueryOn(admin(), sql);

describe('migration LifecycleRules1764000000000 (integration, real PostgreSQL)', () => {
  let url: string;
  let db: DataSource;

  beforeAll(async () => {
    await adminQuery(`CREATE DATABASE ${name}`);
    const u = new URL(admin());
    u.pathname = `/${name}`;
    url = u.toString();
    const previous = await new DataSource({ ...dataSourceOptions(url, { poolSize: 2 }), migrations: MIGRATIONS.slice(0, 3) }).initialize();
    await runMigrations(previous);
    // what the previous release stored: a refunded yearly and a renewal filed at the purchaseDate
    await previous.query(`
      INSERT INTO read_model.transactions (app_id, transaction_id, receipt_id, purchase_id, product_id, platform, purchase_date,
        last_renewal_date, expiration_date, renewal_intent, is_expired, occurred_at, version_time, version_id) VALUES
      ('app', 'apple:y', 'apple:r1', 'apple:py', 'apple:yearly', 'apple', '2026-01-10Z', NULL, '2027-01-10Z', 'Lapse', true, '2026-01-10Z', '2026-03-01Z', 'e2'),
      ('app', 'apple:m1', 'apple:r1', 'apple:pm', 'apple:monthly', 'apple', '2026-08-08Z', NULL, '2026-09-08Z', 'Renew', NULL, '2026-08-08Z', '2026-08-08Z', 'e3'),
      ('app', 'apple:m2', 'apple:r1', 'apple:pm', 'apple:monthly', 'apple', '2026-08-08Z', '2026-09-08Z', '2026-10-08Z', 'Renew', NULL, '2026-08-08Z', '2026-09-08Z', 'e4'),
      ('app', 'apple:n', 'apple:r2', 'apple:pn', 'apple:coins', 'apple', NULL, NULL, NULL, NULL, NULL, '2026-04-01Z', '2026-04-02Z', 'e5')`);
    await previous.query(`INSERT INTO read_model.receipts VALUES ('app', 'apple:r1', 'ann', '2026-01-10Z', 'e1')`);
    await previous.query(`INSERT INTO read_model.customers (app_id, application_username, first_seen_at) VALUES ('app', 'ann', '2026-01-10Z')`);
    await previous.query(`INSERT INTO read_model.transaction_day_counts VALUES ('app', '2026-01-10', 1), ('app', '2026-08-08', 2), ('app', '2026-04-01', 1)`);
    await previous.query(`INSERT INTO read_model.customer_day_counts VALUES ('app', '2026-01-10', 1)`);
    await previous.query(
      `UPDATE read_model.customers SET transaction_count = 3, expiration_date = '2027-01-10Z', active_until = '2026-10-08Z', renewal_intent = 'Lapse'`,
    );
    // a rebuild in progress has the old table shapes
    await previous.query(`CREATE SCHEMA read_model_next`);
    await previous.query(
      `INSERT INTO public.rebuilds (kind, schema_name, status, target_offsets, owner) VALUES ('rebuild', 'read_model_next', 'running', '{}', 'test')`,
    );
    await previous.destroy();

    db = await new DataSource(dataSourceOptions(url, { poolSize: 2 })).initialize();
    // every migration after the previous release's three, this one first
    expect(await runMigrations(db)).toEqual(MIGRATIONS.slice(3).map((m) => m.name));
    expect(MIGRATIONS[3].name).toBe('LifecycleRules1764000000000');
  });
  afterAll(async () => {
    await db?.destroy();
    await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  });

  it('gives every existing row a change position (ChangeFeed1764200000000): a feed from 0 lists them all', async () => {
    const [counts] = await db.query(`
      SELECT (SELECT count(*) FROM read_model.transactions WHERE change_position IS NULL)::int AS tx_unstamped,
             (SELECT count(*) FROM read_model.customers WHERE change_position IS NULL)::int AS customers_unstamped,
             (SELECT count(*) FROM read_model.transactions)::int AS tx`);
    expect(counts).toEqual({ tx_unstamped: 0, customers_unstamped: 0, tx: 4 });
  });

  it('re-files transactions at their charge date and re-counts the days', async () => {
    const rows = await db.query(`SELECT transaction_id, occurred_at, first_event_at FROM read_model.transactions ORDER BY transaction_id`);
    expect(rows.map((r: { transaction_id: string; occurred_at: Date }) => [r.transaction_id, r.occurred_at.toISOString()])).toEqual([
      ['apple:m1', '2026-08-08T00:00:00.000Z'],
      ['apple:m2', '2026-09-08T00:00:00.000Z'],
      ['apple:n', '2026-04-01T00:00:00.000Z'],
      ['apple:y', '2026-01-10T00:00:00.000Z'],
    ]);
    expect(await db.query(`SELECT day::text, n::int FROM read_model.transaction_day_counts ORDER BY day`)).toEqual([
      { day: '2026-01-10', n: 1 },
      { day: '2026-04-01', n: 1 },
      { day: '2026-08-08', n: 1 },
      { day: '2026-09-08', n: 1 },
    ]);
  });

  it('re-derives summaries with the lifecycle rules: the refunded yearly stops driving it', async () => {
    const [ann] = await db.query(`SELECT transaction_count, expiration_date, renewal_intent, last_renewal_date, last_purchase_date FROM read_model.customers`);
    // the yearly says isExpired (no revocation date was stored): it ended at its snapshot, 2026-03-01
    expect({
      ...ann,
      expiration_date: ann.expiration_date.toISOString(),
      last_renewal_date: ann.last_renewal_date.toISOString(),
      last_purchase_date: ann.last_purchase_date.toISOString(),
    }).toEqual({
      transaction_count: 3,
      expiration_date: '2026-10-08T00:00:00.000Z',
      renewal_intent: 'Renew',
      last_renewal_date: '2026-09-08T00:00:00.000Z',
      last_purchase_date: '2026-09-08T00:00:00.000Z',
    });
    const columns = await db.query(
      `SELECT column_name FROM information_schema.columns WHERE table_schema = 'read_model' AND table_name = 'customers' AND column_name = 'active_until'`,
    );
    expect(columns).toEqual([]);
  });

  it('keeps existing receipt links as receipt.linked ones, and aborts a rebuild built with the old shapes', async () => {
    expect(await db.query(`SELECT receipt_id, application_username, explicit FROM read_model.receipts`)).toEqual([
      { receipt_id: 'apple:r1', application_username: 'ann', explicit: true },
    ]);
    expect(await db.query(`SELECT status FROM public.rebuilds`)).toEqual([{ status: 'aborted' }]);
    expect(await db.query(`SELECT 1 FROM pg_namespace WHERE nspname = 'read_model_next'`)).toEqual([]);
  });
});
