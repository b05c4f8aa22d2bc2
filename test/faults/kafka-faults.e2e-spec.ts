import { jest } from '@jest/globals';
import { startKafkaBroker, type KafkaBroker } from '../kafka/broker.mjs';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { expectEventually } from '../utils/expect-eventually.js';
import { createTopic, produce, testKafka, uniqueTopic, waitUntilCaughtUp } from '../utils/kafka.js';
import { runCli } from '../utils/processes.js';
import { expectEqualsFromScratch, snapshotReadModels } from '../utils/read-models.js';
import { scenarioEvents, toBuffers } from '../utils/scenario.js';

// What the operator or the infrastructure can do to the log under the read models: a recreated
// topic, retention passing the stored offsets, a broker away or back empty. Each ends in a clear
// state, and once the documented command is run, in read models equal to a from-scratch projection
// with nothing lost or doubled. A broker of this file's own, so stopping it disturbs no other test.

const OUTAGE_MS = Number(process.env.BROKER_OUTAGE_MS ?? 20_000);
jest.setTimeout(300_000 + OUTAGE_MS);

type Ready = {
  status: number;
  consumer: { status: string; state: string; reason?: string; blocked?: { partition: number; storedOffset: string; logEnd: string }[] };
};

describe('Kafka faults (e2e: real broker and PostgreSQL)', () => {
  let broker: KafkaBroker;
  let db: TestDatabase;
  let api: TestApp | undefined;
  let topic: string;

  beforeAll(async () => {
    broker = await startKafkaBroker();
  });
  afterAll(async () => {
    await broker?.destroy();
  });
  beforeEach(async () => {
    db = await createTestDatabase('faults');
    topic = uniqueTopic('faults');
  });
  afterEach(async () => {
    await api?.close();
    api = undefined;
    await db?.drop();
    // a failed test must not leave the broker down for the next one
    if (broker.pid === undefined || !isRunning(broker.pid)) await broker.restart();
  });

  const env = () => ({ KAFKA_BROKERS: broker.brokers, KAFKA_TOPIC: topic, KAFKA_GROUP_ID: `g-${topic}`, KAFKA_SESSION_TIMEOUT_MS: '6000' });
  const start = async () => {
    api = await startTestApp({ databaseUrl: db.url, env: { ...env(), CONSUMER_ENABLED: 'true' } });
    return api;
  };
  const stop = async () => {
    await api?.close();
    api = undefined;
  };
  const ready = async (): Promise<Ready> => {
    const res = await api!.get('/health/ready');
    const details = res.status === 200 ? res.body.details : res.body.checks?.details;
    return { status: res.status, consumer: details?.consumer };
  };
  const cli = (args: string[]) => runCli(args, { DATABASE_URL: db.url, ...env() });
  const events = (seed: number, customers: number) => toBuffers(scenarioEvents({ seed, customers, tag: `f${seed}` }));
  const recreate = async (partitions: number) => {
    const admin = testKafka(broker.brokers).admin();
    await admin.connect();
    await admin.deleteTopics({ topics: [topic] });
    await expectEventually(async () => expect(await admin.listTopics()).not.toContain(topic), 30_000);
    await admin.disconnect();
    await createTopic(topic, partitions, broker.brokers);
  };
  /** A topic with these events, projected by a running service. */
  const projected = async (partitions: number, values: Buffer[]) => {
    await createTopic(topic, partitions, broker.brokers);
    await start();
    await produce(topic, values, broker.brokers);
    await waitUntilCaughtUp(db.dataSource, topic, 60_000, broker.brokers);
  };
  /** The operator's command, then ready again and equal to a from-scratch projection of `expected`. */
  const resetThenExpect = async (partitions: string[], expected: Buffer[]) => {
    for (const partition of partitions) expect((await cli(['offsets', 'reset', '--to', 'earliest', '--partition', partition])).code).toBe(0);
    await expectEventually(async () => expect((await ready()).status).toBe(200), 60_000);
    await waitUntilCaughtUp(db.dataSource, topic, 60_000, broker.brokers);
    await expectEqualsFromScratch(db.dataSource, expected);
  };

  it('a recreated topic shorter than the stored offsets: blocked, named, and resumed by `offsets reset`', async () => {
    const before = events(1, 12);
    await projected(2, before);
    await stop();

    await recreate(2);
    const after = events(2, 2);
    await produce(topic, after, broker.brokers);
    await start();
    await expectEventually(async () => {
      const r = await ready();
      expect(r.status).toBe(503);
      expect(r.consumer).toMatchObject({ status: 'down', state: 'blocked', reason: expect.stringContaining('topic recreated or truncated') });
      expect(r.consumer.blocked?.map((b) => b.partition)).toEqual([0, 1]);
    }, 60_000);
    expect((await api!.get('/metrics')).body).toMatch(/subscription_records_projection_partition_blocked\{partition="0"\} 1/);
    // nothing new was projected: the new events wait for the operator
    const shown = await cli(['offsets', 'show']);
    expect(shown.code).toBe(3);
    expect(shown.stdout).toMatch(/partition 0: stored offset \d+, log 0\.\.\d+: the log ends before the stored offset/);

    await resetThenExpect(['0', '1'], [...before, ...after]);
  });

  it('a recreated topic that has grown past the stored offsets is recognised by the message projected last', async () => {
    const before = events(3, 6);
    await projected(1, before);
    await stop();

    await recreate(1);
    const after = events(4, 15);
    expect(after.length).toBeGreaterThan(before.length);
    await produce(topic, after, broker.brokers);
    await start();
    await expectEventually(async () => {
      const r = await ready();
      expect(r.consumer).toMatchObject({ state: 'blocked', reason: expect.stringContaining('the topic was recreated or rewritten') });
    }, 60_000);
    await resetThenExpect(['0'], [...before, ...after]);
  });

  it('retention passed the stored offset: blocked; rebuild refuses the partial log; reset resumes from the log start', async () => {
    const first = events(5, 5);
    await projected(1, first);
    await stop();

    const second = events(6, 8);
    await produce(topic, second, broker.brokers);
    const cut = first.length + 4;
    const admin = testKafka(broker.brokers).admin();
    await admin.connect();
    await admin.fetchTopicMetadata({ topics: [topic] });
    await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: String(cut) }] });
    await admin.disconnect();

    await start();
    await expectEventually(async () => {
      const r = await ready();
      expect(r.consumer).toMatchObject({ state: 'blocked', reason: expect.stringContaining('deleted (retention)') });
    }, 60_000);
    const rebuild = await cli(['rebuild']);
    expect(rebuild.code).toBe(1);
    expect(rebuild.stderr).toContain(`no longer starts at offset 0 (partition 0 starts at ${cut})`);
    expect(rebuild.stderr).toContain('--allow-partial-history');

    const reset = await cli(['offsets', 'reset', '--to', 'earliest', '--partition', '0']);
    expect(reset.stdout).toContain(`partition 0: stored offset ${first.length} -> ${cut}`);
    await expectEventually(async () => expect((await ready()).status).toBe(200), 60_000);
    await waitUntilCaughtUp(db.dataSource, topic, 60_000, broker.brokers);
    await expectEqualsFromScratch(db.dataSource, [...first, ...second.slice(cut - first.length)]);
  });

  it('a topic recreated while a rebuild reads it: the rebuild stops and says so, its generation is dropped, live is untouched', async () => {
    const before = events(8, 60);
    await createTopic(topic, 2, broker.brokers);
    await start();
    // small record batches, so the rebuild's small fetches stage the log in many steps
    for (let i = 0; i < before.length; i += 10) await produce(topic, before.slice(i, i + 10), broker.brokers);
    await waitUntilCaughtUp(db.dataSource, topic, 60_000, broker.brokers);
    await stop();
    const live = await snapshotReadModels(db.dataSource);
    const killed = await runCli(['rebuild'], { DATABASE_URL: db.url, ...env(), KAFKA_MAX_BYTES_PER_PARTITION: '8192', FAILPOINTS: 'after-db-commit:1' });
    expect(killed.code).toBeNull(); // killed after staging its first batch
    await recreate(2);
    const after = events(9, 2);
    await produce(topic, after, broker.brokers);

    // resumed: the staged offsets lie beyond the new log, which would never reach the old targets
    const failed = await cli(['rebuild']);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/rebuild #1 abandoned and read_model_next dropped: the log changed while it was being read \(partition \d: .+\)/);
    expect(await db.dataSource.query(`SELECT status, report->>'reason' AS reason FROM public.rebuilds`)).toEqual([
      { status: 'aborted', reason: expect.stringContaining('the log changed while it was being read') },
    ]);
    expect(await db.dataSource.query(`SELECT 1 FROM pg_namespace WHERE nspname = 'read_model_next'`)).toEqual([]);
    expect(await snapshotReadModels(db.dataSource)).toEqual(live);

    // the operator's way back: live offsets into the new log, then a rebuild from it alone
    for (const partition of ['0', '1']) expect((await cli(['offsets', 'reset', '--to', 'earliest', '--partition', partition])).code).toBe(0);
    const rebuilt = await cli(['rebuild']);
    expect(rebuilt.stderr).toBe('');
    expect(rebuilt.code).toBe(0);
    await expectEqualsFromScratch(db.dataSource, after);
  });

  it('broker away: readiness says so and lag stays exported (stale); back with its data: ready and caught up', async () => {
    const first = events(7, 6);
    await projected(2, first);
    // Prometheus has scraped while the broker was there
    expect((await api!.get('/metrics')).body).toMatch(/subscription_records_projection_consumer_lag_stale 0/);
    await broker.stop();
    const stoppedAt = Date.now();
    await expectEventually(async () => {
      const r = await ready();
      expect(r.status).toBe(503);
      expect(r.consumer.state).toBe('connecting');
    }, 60_000);
    // down for BROKER_OUTAGE_MS in all (20 s in `npm test`, 60 s in `npm run test:chaos`)
    await new Promise((r) => setTimeout(r, Math.max(0, OUTAGE_MS - (Date.now() - stoppedAt))));
    expect((await ready()).consumer.state).toBe('connecting');
    const metrics = (await api!.get('/metrics')).body as string;
    expect(metrics).toMatch(new RegExp(`subscription_records_projection_consumer_lag_messages\\{topic="${topic}",partition="0"\\} 0`));
    expect(metrics).toMatch(/subscription_records_projection_consumer_lag_stale 1/);
    expect(metrics).toMatch(/subscription_records_projection_consumer_state\{state="connecting"\} 1/);

    await broker.restart();
    const second = events(8, 6);
    await produce(topic, second, broker.brokers);
    await expectEventually(async () => expect((await ready()).status).toBe(200), 90_000);
    await waitUntilCaughtUp(db.dataSource, topic, 90_000, broker.brokers);
    await expectEqualsFromScratch(db.dataSource, [...first, ...second]);
  });

  it('broker back empty: the topic is made again, the partitions block, and a reset resumes', async () => {
    const first = events(9, 6);
    await projected(1, first);

    await broker.restartEmpty();
    // the consumer restarts itself and ensures its topics again (kafkajs' own restart would not)
    await expectEventually(async () => {
      const admin = testKafka(broker.brokers).admin();
      await admin.connect();
      const topics = await admin.listTopics();
      await admin.disconnect();
      expect(topics).toEqual(expect.arrayContaining([topic, `${topic}.dlq`]));
    }, 90_000);
    await expectEventually(async () => expect((await ready()).consumer).toMatchObject({ state: 'blocked' }), 90_000);

    const second = events(10, 3);
    await produce(topic, second, broker.brokers);
    await resetThenExpect(['0'], [...first, ...second]);
  });
});

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
