import { jest } from '@jest/globals';
import { DataSource } from 'typeorm';
import { dataSourceOptions, MIGRATIONS } from '../../src/database/data-source-options.js';
import { runMigrations } from '../../src/database/migrate.js';
import { adminQuery as adminQueryOn } from '../utils/database.js';

// A database left at any earlier schema version upgrades to the current one: each migration carries
// its own SQL (or asks for a re-derivation done after the last one), never today's code on an old schema.
jest.setTimeout(300_000);

const admin = () => process.env.TEST_ADMIN_DATABASE_URL!;

const adminQuery = (sql: string) => adminQueryOn(admin(), sql);

function urlOf(name: string): string {
  const u = new URL(admin());
  u.pathname = `/${name}`;
  return u.toString();
}

it.each(MIGRATIONS.slice(1).map((m, i) => [i + 1, m.name] as const))(
  'from the schema before migration %i (%s) to the current one, with a customer on it',
  async (k) => {
    const name = `sr_upgrade_from_${k}_${process.env.TEST_RUN_ID}_${process.pid}`;
    await adminQuery(`CREATE DATABASE ${name}`);
    try {
      const old = await new DataSource({ ...dataSourceOptions(urlOf(name), { poolSize: 2 }), migrations: MIGRATIONS.slice(0, k) }).initialize();
      try {
        await runMigrations(old);
        // rows every schema version has: a customer owning a receipt with one transaction
        await old.query(`INSERT INTO read_model.customers (app_id, application_username, first_seen_at) VALUES ('app', 'ann', '2026-01-10Z')`);
        const row: Record<string, unknown> = {
          app_id: 'app',
          transaction_id: 'apple:t1',
          receipt_id: 'apple:r1',
          purchase_id: 'apple:p1',
          product_id: 'apple:monthly',
          platform: 'apple',
          purchase_date: '2026-01-10Z',
          expiration_date: '2026-02-10Z',
          occurred_at: '2026-01-10Z',
          version_time: '2026-01-10Z',
          version_id: 'e1',
        };
        // columns a later version requires, filled as that version's projection would (first event = purchase)
        const required = (await old.query(
          `SELECT column_name, data_type FROM information_schema.columns
         WHERE table_schema = 'read_model' AND table_name = 'transactions' AND is_nullable = 'NO' AND column_default IS NULL`,
        )) as { column_name: string; data_type: string }[];
        for (const c of required)
          if (!(c.column_name in row)) row[c.column_name] = c.data_type.startsWith('timestamp') ? '2026-01-10Z' : c.data_type === 'boolean' ? false : 'x';
        const columns = Object.keys(row);
        await old.query(
          `INSERT INTO read_model.transactions (${columns.join(', ')}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')})`,
          Object.values(row),
        );
        await old.query(`INSERT INTO read_model.receipts (app_id, receipt_id, application_username) VALUES ('app', 'apple:r1', 'ann')`).catch(() => undefined);
      } finally {
        await old.destroy();
      }
      const current = await new DataSource(dataSourceOptions(urlOf(name), { poolSize: 2 })).initialize();
      try {
        expect(await runMigrations(current)).toEqual(MIGRATIONS.slice(k).map((m) => m.name));
        const [{ count }] = await current.query(`SELECT count(*)::int AS count FROM read_model.transactions WHERE transaction_id = 'apple:t1'`);
        expect(count).toBe(1);
        expect(
          await current.query(`SELECT to_regclass('public.pending_rederivations') IS NULL OR NOT EXISTS (SELECT FROM public.pending_rederivations) AS done`),
        ).toEqual([{ done: true }]);
      } finally {
        await current.destroy();
      }
    } finally {
      await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    }
  },
);
