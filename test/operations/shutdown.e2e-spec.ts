import { jest } from '@jest/globals';
import { freePort } from '../kafka/broker.mjs';
import { appendToEventLog } from '../../src/event-log/event-log.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { expectEventually } from '../utils/expect-eventually.js';
import { createTopic, kafkaBrokers, produce, testKafka, uniqueTopic } from '../utils/kafka.js';
import { startService } from '../utils/processes.js';
import { scenarioEvents, toBuffers } from '../utils/scenario.js';

jest.setTimeout(120_000);

describe('graceful shutdown (e2e, the built service against a real broker)', () => {
  let db: TestDatabase;

  beforeEach(async () => {
    db = await createTestDatabase('shutdown');
  });
  afterEach(async () => {
    await db?.drop();
  });

  async function startConsuming(topic: string, groupId: string, env: Record<string, string> = {}) {
    const port = await freePort();
    const service = startService({
      DATABASE_URL: db.url,
      PORT: String(port),
      KAFKA_BROKERS: kafkaBrokers(),
      KAFKA_TOPIC: topic,
      KAFKA_GROUP_ID: groupId,
      KAFKA_SESSION_TIMEOUT_MS: '6000',
      KAFKA_MAX_BYTES_PER_PARTITION: '8192', // many small batches, so one is in flight when the signal comes
      ...env,
    });
    return Object.assign(service, { port });
  }

  /** The built service consuming the embedded event log (no Kafka). */
  async function startEmbedded(topic: string) {
    const port = await freePort();
    return Object.assign(startService({ DATABASE_URL: db.url, PORT: String(port), CONSUMER_ENABLED: 'true', KAFKA_TOPIC: topic }), { port });
  }

  /** A fresh topic of 1500 customers' events, in 3 partitions. */
  async function backlogTopic(seed: number) {
    const topic = uniqueTopic('sigterm');
    await createTopic(topic, 3);
    await produce(topic, toBuffers(scenarioEvents({ seed, customers: 1500 })));
    return { topic, groupId: `g-${topic}` };
  }

  async function storedTotal(topic: string): Promise<number> {
    const [{ n }] = await db.dataSource.query(`SELECT coalesce(sum(next_offset), 0)::int AS n FROM read_model.projection_offsets WHERE topic = $1`, [topic]);
    return n;
  }

  /** Every batch the database committed was also committed to Kafka before the process exited. */
  async function expectKafkaAgrees(topic: string, groupId: string): Promise<void> {
    const stored: { partition: number; next_offset: string }[] = await db.dataSource.query(
      // (a partition with nothing projected has no Kafka commit either)
      `SELECT partition, next_offset::text AS next_offset FROM read_model.projection_offsets WHERE topic = $1 AND next_offset > 0 ORDER BY partition`,
      [topic],
    );
    expect(stored.length).toBeGreaterThan(0);
    const admin = testKafka().admin();
    await admin.connect();
    try {
      const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
      const kafka = new Map(committed.partitions.map((p) => [p.partition, p.offset]));
      expect(Object.fromEntries(stored.map((s) => [s.partition, kafka.get(s.partition)]))).toEqual(
        Object.fromEntries(stored.map((s) => [s.partition, s.next_offset])),
      );
      const end = (await admin.fetchTopicOffsets(topic)).reduce((sum, p) => sum + Number(p.high), 0);
      expect(stored.reduce((sum, s) => sum + Number(s.next_offset), 0)).toBeLessThan(end); // it really stopped mid-stream
    } finally {
      await admin.disconnect();
    }
  }

  it('on SIGTERM mid-ingest, finishes the batch in flight, commits it to PostgreSQL and Kafka, and exits 0', async () => {
    const { topic, groupId } = await backlogTopic(91);
    const service = await startConsuming(topic, groupId);
    await expectEventually(async () => expect(await storedTotal(topic)).toBeGreaterThan(0), 60_000, 20);
    expect(await service.kill('SIGTERM')).toBe(0);
    await expectKafkaAgrees(topic, groupId);
  });

  /**
   * The service started with its offset rows made and held: its first batches wait inside their
   * transactions (with Kafka, inside kafkajs' eachBatch). `kafka`: a topic of 3 partitions on the
   * broker; otherwise the embedded event log in PostgreSQL.
   */
  async function startBehindLock(seed: number, source: 'kafka' | 'embedded') {
    const { topic, groupId } = source === 'kafka' ? await backlogTopic(seed) : { topic: 'purchase-events', groupId: '' };
    const partitions = source === 'kafka' ? 2 : 0;
    if (source === 'embedded') {
      const events = toBuffers(scenarioEvents({ seed, customers: 300 })).map((value) => ({ key: null, value }));
      await appendToEventLog(db.dataSource, topic, events);
    }
    await db.dataSource.query(`INSERT INTO read_model.projection_offsets (topic, partition, next_offset) SELECT $1, p, 0 FROM generate_series(0, $2::int) p`, [
      topic,
      partitions,
    ]);
    const blocker = db.dataSource.createQueryRunner();
    await blocker.connect();
    await blocker.startTransaction();
    await blocker.query(`SELECT partition FROM read_model.projection_offsets WHERE topic = $1 FOR UPDATE`, [topic]);
    const service =
      source === 'kafka'
        ? // A batch waiting on a lock sends no heartbeats: a session long enough that the group keeps it.
          await startConsuming(topic, groupId, { KAFKA_SESSION_TIMEOUT_MS: '60000' })
        : await startEmbedded(topic);
    await expectEventually(
      async () => {
        // (not on the blocker's connection: inside a transaction, pg_stat_activity is read once)
        const [{ waiting }] = await db.dataSource.query(
          `SELECT count(*)::int AS waiting FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        );
        expect(waiting).toBeGreaterThan(0);
      },
      60_000,
      20,
    );
    return {
      topic,
      groupId,
      service,
      blocker,
      /** Resolves once the shutdown has reached the consumer (it still answers HTTP then). */
      async consumerStopped() {
        const ready = `http://127.0.0.1:${service.port}/health/ready`;
        type Readiness = { checks?: { details?: { consumer?: { state?: string } } } };
        await expectEventually(
          async () => expect(((await (await fetch(ready)).json()) as Readiness).checks?.details?.consumer?.state).toBe('stopped'),
          20_000,
          20,
        );
      },
      async release() {
        if (blocker.isTransactionActive) await blocker.rollbackTransaction();
        await blocker.release();
        await service.kill();
      },
    };
  }

  for (const source of ['kafka', 'embedded'] as const) {
    describe(source === 'kafka' ? 'from Kafka' : 'from the embedded event log', () => {
      it('on SIGTERM while batches wait on PostgreSQL, commits them (to PostgreSQL, then to Kafka) before leaving', async () => {
        const run = await startBehindLock(92, source);
        try {
          const exited = run.service.kill('SIGTERM');
          await run.consumerStopped();
          await new Promise((r) => setTimeout(r, 500));
          await run.blocker.commitTransaction();
          expect(await exited).toBe(0);
        } finally {
          await run.release();
        }
        expect(await storedTotal(run.topic)).toBeGreaterThan(0); // the waiting batches were finished, not dropped
        if (source === 'kafka') await expectKafkaAgrees(run.topic, run.groupId);
      });

      it('on SIGTERM while a batch waits on PostgreSQL for longer than 15 s, ends its transaction, commits nothing of it anywhere and exits 0', async () => {
        const run = await startBehindLock(93, source);
        const started = Date.now();
        try {
          expect(await run.service.kill('SIGTERM')).toBe(0);
          expect(Date.now() - started).toBeGreaterThanOrEqual(15_000);
          expect(run.service.output()).toMatch(/unfinished after 15 s|still in flight after 15 s/);
          expect(run.service.output()).not.toMatch(/did not end with (its|their) transactions?/);
        } finally {
          await run.release();
        }
        expect(await storedTotal(run.topic)).toBe(0);
        if (source === 'embedded') return;
        const admin = testKafka().admin();
        await admin.connect();
        try {
          const [committed] = await admin.fetchOffsets({ groupId: run.groupId, topics: [run.topic] });
          expect(committed.partitions.map((p) => p.offset)).toEqual(['-1', '-1', '-1']);
        } finally {
          await admin.disconnect();
        }
      });
    });
  }
});
