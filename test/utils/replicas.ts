import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { HIGH_WATER } from '../../src/change-feed/change-positions.sql.js';
import { dataSourceOptions } from '../../src/database/data-source-options.js';
import { adminQuery } from './database.js';
import { expectEventually } from './expect-eventually.js';

let counter = 0;

const withDatabase = (url: string, database: string) => {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
};

async function one<T>(url: string, sql: string): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows[0] as T;
  } finally {
    await client.end();
  }
}

/** Why a standby has not replayed up to `lsn`: its receiver, its replay, the primary's sender, its log's tail. */
async function replicationReport(primary: string, standby: string, index: number, lsn: string): Promise<string> {
  const ask = (url: string, sql: string) =>
    one<unknown>(url, sql).then(
      (row) => JSON.stringify(row),
      (error: Error) => `(${error.message})`,
    );
  const log = path.join(process.env.TEST_REPLICA_DIR ?? '', `standby${index + 1}`, 'server.log');
  const tail = existsSync(log) ? readFileSync(log, 'utf8').split('\n').slice(-40).join('\n') : `(no ${log})`;
  return [
    `standby ${index}, waiting for ${lsn}:`,
    await ask(
      standby,
      `SELECT pg_last_wal_receive_lsn()::text AS received, pg_last_wal_replay_lsn()::text AS replayed, pg_get_wal_replay_pause_state() AS pause, pg_last_xact_replay_timestamp()::text AS last_replayed_commit`,
    ),
    await ask(standby, `SELECT status, flushed_lsn::text, latest_end_lsn::text, last_msg_receipt_time::text FROM pg_stat_wal_receiver`),
    await ask(
      standby,
      `SELECT json_agg(json_build_object('pid', pid, 'type', backend_type, 'datname', datname, 'state', state, 'wait', wait_event_type || ':' || wait_event, 'xact_start', xact_start::text, 'query', left(query, 80))) AS backends FROM pg_stat_activity WHERE backend_type IN ('client backend', 'startup', 'walreceiver')`,
    ),
    await ask(
      primary,
      `SELECT json_agg(json_build_object('name', application_name, 'state', state, 'sent', sent_lsn::text, 'flushed', flush_lsn::text, 'replayed', replay_lsn::text)) AS senders FROM pg_stat_replication`,
    ),
    `${log}:`,
    tail,
  ].join('\n');
}

export type ReplicatedDatabase = {
  /** The database on the primary (writes). */
  url: string;
  name: string;
  /** The same database on each standby (read-only, streamed). */
  standbyUrls: string[];
  dataSource: DataSource;
  /** Waits until every standby replaying WAL has replayed everything the primary wrote so far. */
  caughtUp(): Promise<void>;
  /** Pauses a standby's replay (pg_wal_replay_pause) and waits until it has taken effect. */
  pause(standby: number): Promise<void>;
  resume(standby: number): Promise<void>;
  drop(): Promise<void>;
};

/**
 * A database of this test file's own on the primary of the replica servers global set-up started
 * (test/setup/replica-pair.mjs), cloned from its migrated template, and present on the standbys.
 */
export async function createReplicatedDatabase(label: string): Promise<ReplicatedDatabase> {
  const admin = process.env.TEST_REPLICA_PRIMARY_URL!;
  const standbyAdmins = process.env.TEST_REPLICA_STANDBY_URLS!.split(',');
  const name = `sr_${label
    .replace(/[^a-z0-9]/gi, '')
    .toLowerCase()
    .slice(0, 20)}_${process.env.TEST_RUN_ID}_${process.pid}_${++counter}`;
  await adminQuery(admin, `CREATE DATABASE ${name} TEMPLATE ${process.env.TEST_REPLICA_TEMPLATE}`);
  const paused = new Set<number>();
  // Pauses and resumes of one standby run one after the other: a resume landing while a pause waits
  // for replay to stop would leave that wait unanswered.
  const queues = standbyAdmins.map(() => Promise.resolve());
  const inTurn = (standby: number, step: () => Promise<void>) => {
    const run = queues[standby].then(step);
    queues[standby] = run.catch(() => undefined);
    return run;
  };
  const caughtUp = async () => {
    const { lsn } = await one<{ lsn: string }>(admin, 'SELECT pg_current_wal_lsn()::text AS lsn');
    let behind = -1;
    await expectEventually(
      async () => {
        for (const [i, standby] of standbyAdmins.entries()) {
          if (paused.has(i)) continue;
          behind = i;
          const { replayed } = await one<{ replayed: boolean }>(standby, `SELECT pg_last_wal_replay_lsn() >= '${lsn}'::pg_lsn AS replayed`);
          expect({ standby: i, replayed }).toEqual({ standby: i, replayed: true });
        }
      },
      30_000,
      20,
    ).catch(async (error: Error) => {
      throw new Error(`${error.message}\n${await replicationReport(admin, standbyAdmins[behind], behind, lsn)}`);
    });
  };
  await caughtUp();
  const dataSource = await new DataSource(dataSourceOptions(withDatabase(admin, name), { poolSize: 6, applicationName: 'test' })).initialize();
  return {
    url: withDatabase(admin, name),
    name,
    standbyUrls: standbyAdmins.map((u) => withDatabase(u, name)),
    dataSource,
    caughtUp,
    pause: (standby) =>
      inTurn(standby, async () => {
        paused.add(standby);
        await adminQuery(standbyAdmins[standby], 'SELECT pg_wal_replay_pause()');
        // Replay stops before the next record it reads: with the primary idle there is none, so write one (no xid).
        await expectEventually(
          async () => {
            await adminQuery(admin, `SELECT pg_logical_emit_message(false, 'sr-test', 'pause')`);
            expect(await one<{ state: string }>(standbyAdmins[standby], 'SELECT pg_get_wal_replay_pause_state() AS state')).toEqual({ state: 'paused' });
          },
          30_000,
          20,
        );
      }),
    resume: (standby) =>
      inTurn(standby, async () => {
        paused.delete(standby);
        await adminQuery(standbyAdmins[standby], 'SELECT pg_wal_replay_resume()');
      }),
    async drop() {
      // After a failed test a pause may still be under way: let it end, then leave no standby paused.
      await Promise.all(queues);
      for (const standby of standbyAdmins) await adminQuery(standby, 'SELECT pg_wal_replay_resume()');
      if (dataSource.isInitialized) await dataSource.destroy();
      await adminQuery(admin, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

/**
 * TEST_READS=standby (`npm run test:standby`, part of `npm test`): the read-API and change-feed
 * suites run with their databases on the replica servers and every app reading from the standbys
 * (DATABASE_READ_URL). Each request of a test waits until the standbys have replayed what the test
 * wrote before it, so the suites keep their meaning: the same answers, served by a standby.
 */
export const readsFromStandbys = process.env.TEST_READS === 'standby';
const standbysOf = new Map<string, { urls: string[]; caughtUp(): Promise<void> }>();

export async function createStandbyReadDatabase(label: string): Promise<ReplicatedDatabase> {
  const db = await createReplicatedDatabase(label);
  standbysOf.set(db.url, { urls: db.standbyUrls, caughtUp: () => feedCaughtUp(db) });
  return db;
}

/**
 * Replayed, and the change feed's high-water mark as far on every standby as on the primary now. A
 * standby's mark also waits for transactions of other databases (docs/scaling.md), and the test files
 * running beside this one write theirs on the same servers: an empty feed page there means "nothing
 * here yet", not "done", so a suite that drains until an empty page first waits for the mark. One read
 * of the primary's mark can come out low (a transaction of another database ending during that read,
 * test/utils/change-feed.ts, transactionElsewhere) and no read is ever above the true mark, so the
 * higher of two reads is the target. (The last change itself is no target: a test may hold a
 * transaction of this database open below it on purpose, and the mark stays below it meanwhile.)
 */
async function feedCaughtUp(db: ReplicatedDatabase): Promise<void> {
  await db.caughtUp();
  let mark = 0n;
  for (let read = 0; read < 2; read++) {
    const row = await one<{ mark: string }>(db.url, `SELECT ${HIGH_WATER}::text AS mark`);
    if (BigInt(row.mark) > mark) mark = BigInt(row.mark);
  }
  await expectEventually(
    async () => {
      for (const [i, url] of db.standbyUrls.entries()) {
        const { reached } = await one<{ reached: boolean }>(url, `SELECT ${HIGH_WATER} >= ${mark} AS reached`);
        expect({ standby: i, reached }).toEqual({ standby: i, reached: true });
      }
    },
    30_000,
    20,
  );
}

/** The standbys of a database made by createStandbyReadDatabase (undefined for any other). */
export const standbyReadsFor = (databaseUrl: string) => standbysOf.get(databaseUrl);
