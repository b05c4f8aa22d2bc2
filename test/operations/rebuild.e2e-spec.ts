import { jest } from '@jest/globals';
import pg from 'pg';
import { REBUILD_LOCK } from '../../src/database/advisory-locks.js';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { createTopic, kafkaBrokers, produce, uniqueTopic, waitUntilCaughtUp } from '../utils/kafka.js';
import { drainFeed, listAll, type Row } from '../utils/change-feed.js';
import { runCli } from '../utils/processes.js';
import { expectEqualsFromScratch, snapshotReadModels } from '../utils/read-models.js';
import { scenarioEvents, toBuffers } from '../utils/scenario.js';

jest.setTimeout(240_000);

describe('rebuild (e2e: CLI against a real broker and PostgreSQL, live service running)', () => {
  let db: TestDatabase;
  let api: TestApp;
  let topic: string;
  let produced: Buffer[];
  let env: Record<string, string>;

  const expectLiveEqualsFromScratch = async () => {
    await waitUntilCaughtUp(db.dataSource, topic, 90_000);
    await expectEqualsFromScratch(db.dataSource, produced);
  };
  const publish = async (values: Buffer[]) => {
    await produce(topic, values);
    produced.push(...values);
  };
  const rebuilds = () => db.dataSource.query(`SELECT id::text, kind, status FROM public.rebuilds ORDER BY id`);

  beforeEach(async () => {
    db = await createTestDatabase('rebuild');
    topic = uniqueTopic('rebuild');
    await createTopic(topic, 3);
    produced = [];
    env = {
      DATABASE_URL: db.url,
      KAFKA_BROKERS: kafkaBrokers(),
      KAFKA_TOPIC: topic,
      KAFKA_GROUP_ID: `g-${topic}`,
      KAFKA_SESSION_TIMEOUT_MS: '6000',
      KAFKA_MAX_BYTES_PER_PARTITION: '16384',
    };
    api = await startTestApp({ databaseUrl: db.url, env: { ...env, CONSUMER_ENABLED: 'true' } });
    await publish(toBuffers(scenarioEvents({ seed: 61, customers: 300, tag: 'base' })));
    await waitUntilCaughtUp(db.dataSource, topic, 60_000);
  });

  afterEach(async () => {
    await api?.close();
    await db?.drop();
  });

  it('switches to a new generation under continuous reads and publishing: no failed request, nothing lost or doubled', async () => {
    const token = api.token('app-1');
    let stop = false;
    const failures: string[] = [];
    let reads = 0;
    const reader = (async () => {
      while (!stop) {
        for (const path of ['/v2/transactions?limit=50&skip=20', '/v2/customers?limit=50', '/v2/transactions?startdate=2025-03-01T00:00:00Z']) {
          try {
            const res = await api.get(path, token);
            if (res.status !== 200 || !Array.isArray(res.body.rows)) failures.push(`${path}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
            reads++;
          } catch (error) {
            failures.push(`${path}: ${(error as Error).message}`);
          }
        }
      }
    })();
    // A client syncing through the change feed the whole time ends with exactly the listed rows.
    const feed = { customers: new Map<string, Row>(), transactions: new Map<string, Row>() };
    const cursors = { customers: '0', transactions: '0' };
    const syncer = (async () => {
      while (!stop) {
        for (const listing of ['customers', 'transactions'] as const)
          cursors[listing] = await drainFeed(api, token, listing, cursors[listing], feed[listing], 200);
      }
    })();
    const more = toBuffers(scenarioEvents({ seed: 62, customers: 300, tag: 'during' }));
    const publisher = (async () => {
      for (let i = 0; i < more.length && !stop; i += 40) {
        await publish(more.slice(i, i + 40));
        await new Promise((r) => setTimeout(r, 50));
      }
    })();

    const result = await runCli(['rebuild'], env);
    stop = true;
    await Promise.all([reader, publisher, syncer]);

    expect(result.stderr).not.toMatch(/error/i);
    expect(result.stdout).toMatch(/rebuild #1: switched to generation 2/);
    expect(result.code).toBe(0);
    expect(failures).toEqual([]);
    expect(reads).toBeGreaterThan(20);
    const [{ generation }] = await db.dataSource.query('SELECT generation FROM public.read_model_generation');
    expect(generation).toBe(2);
    expect(await db.dataSource.query(`SELECT nspname FROM pg_namespace WHERE nspname LIKE 'read_model%' ORDER BY 1`)).toEqual([{ nspname: 'read_model' }]);
    await publish(toBuffers(scenarioEvents({ seed: 63, customers: 30, tag: 'after' }))); // the live consumer goes on in the new generation
    await expectLiveEqualsFromScratch();
    for (const listing of ['customers', 'transactions'] as const) {
      await drainFeed(api, token, listing, cursors[listing], feed[listing], 500);
      expect(feed[listing]).toEqual(await listAll(api, token, listing));
    }
  });

  it('keeps change-feed cursors across the switch: nothing replayed when nothing changed, a corrected row shown again', async () => {
    const [victim] = await db.dataSource.query(`SELECT app_id, transaction_id FROM read_model.transactions ORDER BY transaction_id LIMIT 1`);
    const token = api.token(victim.app_id);
    const cursors = {
      customers: await drainFeed(api, token, 'customers', '0', new Map(), 1000),
      transactions: await drainFeed(api, token, 'transactions', '0', new Map(), 1000),
    };

    expect((await runCli(['rebuild'], env)).code).toBe(0);
    for (const listing of ['customers', 'transactions'] as const) {
      const replayed = new Map<string, Row>();
      cursors[listing] = await drainFeed(api, token, listing, cursors[listing], replayed, 1000);
      expect([...replayed.keys()]).toEqual([]);
    }

    await db.dataSource.query(`UPDATE read_model.transactions SET renewal_intent = 'Tampered' WHERE app_id = $1 AND transaction_id = $2`, [
      victim.app_id,
      victim.transaction_id,
    ]);
    const tampered = new Map<string, Row>();
    cursors.transactions = await drainFeed(api, token, 'transactions', cursors.transactions, tampered, 1000);
    expect(tampered.get(victim.transaction_id)).toMatchObject({ renewalIntent: 'Tampered' });

    expect((await runCli(['rebuild'], env)).code).toBe(0);
    const corrected = new Map<string, Row>();
    await drainFeed(api, token, 'transactions', cursors.transactions, corrected, 1000);
    expect([...corrected.keys()]).toEqual([victim.transaction_id]);
    expect(corrected.get(victim.transaction_id)!.renewalIntent).not.toBe('Tampered');
    expect(corrected.get(victim.transaction_id)).toEqual((await listAll(api, token, 'transactions')).get(victim.transaction_id));
    const customers = new Map<string, Row>();
    await drainFeed(api, token, 'customers', cursors.customers, customers, 1000);
    expect([...customers.keys()]).toEqual([]);
  });

  it('resumes a rebuild that was killed midway through staging the log', async () => {
    const killed = await runCli(['rebuild'], { ...env, FAILPOINTS: 'after-db-commit:4' });
    expect(killed.code).toBeNull(); // SIGKILL
    expect(await rebuilds()).toEqual([{ id: '1', kind: 'rebuild', status: 'running' }]);
    const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM read_model_next.staged_events`);
    expect(n).toBeGreaterThan(0);

    await publish(toBuffers(scenarioEvents({ seed: 64, customers: 50, tag: 'between' })));
    const resumed = await runCli(['rebuild'], env);
    expect(resumed.stdout).toMatch(/rebuild #1 \(resumed\): switched to generation 2/);
    expect(resumed.code).toBe(0);
    expect(await rebuilds()).toEqual([{ id: '1', kind: 'rebuild', status: 'switched' }]);
    await expectLiveEqualsFromScratch();
  });

  it.each([
    ['inside the fold, before it commits', 'before-fold-commit:1', 1],
    ['after the fold, before catching up', 'after-fold-commit:1', 0],
  ])('resumes a rebuild that was killed %s', async (_, failpoints, staged) => {
    const killed = await runCli(['rebuild'], { ...env, FAILPOINTS: failpoints });
    expect(killed.code).toBeNull();
    expect(await rebuilds()).toEqual([{ id: '1', kind: 'rebuild', status: 'running' }]);
    // killed inside the fold: its transaction rolled back and the staged log is still there
    expect(await db.dataSource.query(`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'read_model_next' AND tablename = 'staged_events'`)).toEqual([
      { n: staged },
    ]);
    await publish(toBuffers(scenarioEvents({ seed: 65, customers: 30, tag: 'after-fold' })));
    const resumed = await runCli(['rebuild'], env);
    expect(resumed.stdout).toMatch(/rebuild #1 \(resumed\): switched to generation 2/);
    expect(resumed.code).toBe(0);
    await expectLiveEqualsFromScratch();
  });

  it('abandons an interrupted rebuild with --abort, leaving the live generation untouched', async () => {
    const before = await snapshotReadModels(db.dataSource);
    const killed = await runCli(['rebuild'], { ...env, FAILPOINTS: 'after-db-commit:3' });
    expect(killed.code).toBeNull();
    const aborted = await runCli(['rebuild', '--abort'], env);
    expect(aborted.code).toBe(0);
    expect(aborted.stdout).toContain('aborted rebuild #1 (read_model_next dropped)');
    expect(await rebuilds()).toEqual([{ id: '1', kind: 'rebuild', status: 'aborted' }]);
    expect(await db.dataSource.query(`SELECT 1 FROM pg_namespace WHERE nspname = 'read_model_next'`)).toEqual([]);
    expect(await snapshotReadModels(db.dataSource)).toEqual(before);
    const [{ generation }] = await db.dataSource.query('SELECT generation FROM public.read_model_generation');
    expect(generation).toBe(1);
  });

  it('verify reports no drift on healthy read models, and the difference planted in the live tables', async () => {
    const clean = await runCli(['rebuild', '--verify'], env);
    expect(clean.stdout).toMatch(/the live read models equal a fresh projection/);
    expect(clean.code).toBe(0);

    const [victim] = await db.dataSource.query(`SELECT app_id, transaction_id FROM read_model.transactions ORDER BY transaction_id LIMIT 1`);
    await db.dataSource.query(`UPDATE read_model.transactions SET renewal_intent = 'Tampered' WHERE app_id = $1 AND transaction_id = $2`, [
      victim.app_id,
      victim.transaction_id,
    ]);
    await db.dataSource.query(`DELETE FROM read_model.customers WHERE application_username = (SELECT min(application_username) FROM read_model.customers)`);
    const [[placed]] = await db.dataSource.query(
      `UPDATE read_model.customer_end_weeks SET n = n + 1 WHERE ctid = (SELECT min(ctid) FROM read_model.customer_end_weeks) RETURNING end_day::text, first_week::text`,
    );
    const drift = await runCli(['rebuild', '--verify'], env);
    expect(drift.code).toBe(3);
    expect(drift.stdout).toMatch(/transactions: live \d+ rows, fresh projection \d+ rows/);
    expect(drift.stdout).toMatch(new RegExp(`only in live: .*"transaction_id":"${victim.transaction_id}".*"renewal_intent":"Tampered"`));
    expect(drift.stdout).toMatch(/customers: live (\d+) rows, fresh projection (\d+) rows/);
    const [, live, fresh] = /customers: live (\d+) rows, fresh projection (\d+) rows/.exec(drift.stdout)!;
    expect(Number(fresh) - Number(live)).toBe(1);
    // a kept count that no longer adds up
    expect(drift.stdout).toMatch(
      new RegExp(
        `customer_end_weeks: live \\d+ rows, fresh projection \\d+ rows\n    only in live: .*"end_day":"${placed.end_day}","first_week":"${placed.first_week}"`,
      ),
    );
    // verify never switches
    const [{ generation }] = await db.dataSource.query('SELECT generation FROM public.read_model_generation');
    expect(generation).toBe(1);
    expect(await db.dataSource.query(`SELECT 1 FROM pg_namespace WHERE nspname = 'read_model_verify'`)).toEqual([]);
  });

  it('allows one rebuild at a time and names the holder of the lock', async () => {
    const holder = new pg.Client({ connectionString: db.url, application_name: 'rebuild ops-host pid 4242' });
    await holder.connect();
    try {
      await holder.query('SELECT pg_advisory_lock($1)', [REBUILD_LOCK]);
      const refused = await runCli(['rebuild'], env);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('another rebuild is running: held by "rebuild ops-host pid 4242"');
      expect(await rebuilds()).toEqual([]);
    } finally {
      await holder.end();
    }
  });
});
