// Runs once before all test files: real PostgreSQL (embedded, or DATABASE_URL's server), a migrated
// template database that every test file clones, and a real Kafka broker (started here unless
// KAFKA_BROKERS names one). Imports the compiled service from dist/: `npm test` builds it first.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../dist/database/embedded-postgres.js';
import { dataSourceOptions } from '../../dist/database/data-source-options.js';
import { runMigrations } from '../../dist/database/migrate.js';
import { DataSource } from 'typeorm';
import { startKafkaBroker } from '../kafka/broker.mjs';
import { freePort, freePorts } from '../kafka/broker.mjs';
import { replicaBinaries, startReplicaPair } from './replica-pair.mjs';

export default async function globalSetup() {
  // `npm run test:unit` runs only the pure *.spec.ts tier, which needs no service.
  if (process.env.TEST_SERVICES === 'none') return;
  // Every temporary file and directory of the run (test files' data dirs, embedded servers of their
  // own, CLI inputs) goes under one directory, removed at teardown: workers and the services they
  // start inherit TMPDIR, which os.tmpdir() reads.
  const runTmp = mkdtempSync(path.join(os.tmpdir(), 'sr-run-'));
  chmodSync(runTmp, 0o755); // embedded servers run as the `postgres` user when we are root
  process.env.TMPDIR = runTmp;
  globalThis.__testTmp = runTmp;
  try {
    await startServices();
  } catch (error) {
    // Jest runs no teardown when set-up fails: what was started so far must not outlive the run.
    await stopServices();
    throw error;
  }
}

/** Stops what set-up started and removes the run's temporary directory (the embedded servers' data: tens of MB each). */
export async function stopServices() {
  await globalThis.__testReplicas?.stop();
  globalThis.__testReplicas = undefined;
  await globalThis.__testKafka?.destroy();
  globalThis.__testKafka = undefined;
  const postgres = globalThis.__testPostgres;
  globalThis.__testPostgres = undefined;
  if (postgres) {
    await postgres.stop();
    rmSync(postgres.dir, { recursive: true, force: true });
  }
  if (globalThis.__testTmp) rmSync(globalThis.__testTmp, { recursive: true, force: true });
  globalThis.__testTmp = undefined;
}

async function startServices() {
  const started = Date.now();
  const runId = `${process.pid}`;
  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'sr-test-pg-'));
    chmodSync(dir, 0o755); // the embedded server runs as the `postgres` user when we are root
    const server = await startEmbeddedPostgres(dir, await freePort());
    globalThis.__testPostgres = { ...server, dir };
    adminUrl = server.url;
  }
  const template = `sr_template_${runId}`;
  await withClient(adminUrl, async (client) => {
    await client.query(`DROP DATABASE IF EXISTS ${template}`);
    await client.query(`CREATE DATABASE ${template}`);
  });
  const templateUrl = withDatabase(adminUrl, template);
  const ds = await new DataSource(dataSourceOptions(templateUrl, { poolSize: 2 })).initialize();
  await runMigrations(ds);
  await ds.destroy();

  process.env.TEST_ADMIN_DATABASE_URL = adminUrl;
  process.env.TEST_TEMPLATE_DATABASE = template;
  process.env.TEST_RUN_ID = runId;

  // The read-replica servers start while the broker does (its JVM start is the longer wait).
  const replicas = startReplicas(runId);
  replicas.catch(() => undefined); // awaited below; a failure meanwhile is not an unhandled rejection
  try {
    if (process.env.TEST_READS === 'standby') {
      // npm run test:standby: the read-API and change-feed suites, which need no broker.
    } else if (process.env.KAFKA_BROKERS) {
      process.env.TEST_KAFKA_BROKERS = process.env.KAFKA_BROKERS;
    } else {
      const broker = await startKafkaBroker();
      globalThis.__testKafka = broker;
      process.env.TEST_KAFKA_BROKERS = broker.brokers;
      process.env.TEST_KAFKA_DIR = broker.dir;
    }
  } finally {
    await replicas;
  }
  const kafka =
    process.env.TEST_READS === 'standby'
      ? 'none (reads from standbys)'
      : process.env.KAFKA_BROKERS
        ? 'from KAFKA_BROKERS'
        : `broker at ${process.env.TEST_KAFKA_BROKERS}`;
  console.log(`\n[test setup] PostgreSQL ${process.env.DATABASE_URL ? 'from DATABASE_URL' : 'embedded'}, Kafka ${kafka} (${Date.now() - started} ms)`);
}

/**
 * A primary with two streaming standbys of the same major version as the suite's PostgreSQL, and a
 * migrated template on it (test/replicas/ clones it; the standbys get every database by WAL).
 */
async function startReplicas(runId) {
  const pair = await startReplicaPair({
    bindir: await replicaBinaries(process.env.DATABASE_URL),
    root: process.env.TMPDIR,
    ports: await freePorts(3),
    // Tests pause replay at arbitrary records: paused just after an autovacuum truncation's
    // AccessExclusiveLock, a standby would block every read of that table until resumed.
    settings: ['autovacuum = off'],
  });
  globalThis.__testReplicas = pair;
  const template = `sr_replica_template_${runId}`;
  await withClient(pair.primary, (client) => client.query(`CREATE DATABASE ${template}`));
  const ds = await new DataSource(dataSourceOptions(withDatabase(pair.primary, template), { poolSize: 2 })).initialize();
  await runMigrations(ds);
  await ds.destroy();
  process.env.TEST_REPLICA_PRIMARY_URL = pair.primary;
  process.env.TEST_REPLICA_STANDBY_URLS = pair.standbys.join(',');
  process.env.TEST_REPLICA_TEMPLATE = template;
  process.env.TEST_REPLICA_DIR = pair.dir; // server logs, for a failing test's report
}

export function withDatabase(url, database) {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

export async function withClient(url, fn) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
