import pg from 'pg';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../../src/database/data-source-options.js';
import { createStandbyReadDatabase, readsFromStandbys } from './replicas.js';

let counter = 0;

export type TestDatabase = { url: string; name: string; dataSource: DataSource; drop(): Promise<void> };

/** A database of this test file's own, cloned from the migrated template made in global setup. */
export async function createTestDatabase(label: string): Promise<TestDatabase> {
  if (readsFromStandbys) return createStandbyReadDatabase(label);
  const admin = process.env.TEST_ADMIN_DATABASE_URL!;
  const template = process.env.TEST_TEMPLATE_DATABASE!;
  const name = `sr_${label
    .replace(/[^a-z0-9]/gi, '')
    .toLowerCase()
    .slice(0, 20)}_${process.env.TEST_RUN_ID}_${process.pid}_${++counter}`;
  await adminQuery(admin, `CREATE DATABASE ${name} TEMPLATE ${template}`);
  const u = new URL(admin);
  u.pathname = `/${name}`;
  const url = u.toString();
  const dataSource = await new DataSource(dataSourceOptions(url, { poolSize: 4, applicationName: 'test' })).initialize();
  return {
    url,
    name,
    dataSource,
    async drop() {
      if (dataSource.isInitialized) await dataSource.destroy();
      await adminQuery(admin, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

/** One statement on the admin database (CREATE/DROP DATABASE). */
export async function adminQuery(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
