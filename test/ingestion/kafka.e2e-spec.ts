import { startKafkaBroker } from '../kafka/broker.mjs';
import { freePort } from '../kafka/broker.mjs';
import { startTestApp, type TestApp } from '../utils/app.js';
import { followFeed } from '../utils/change-feed.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { expectEventually } from '../utils/expect-eventually.js';
import { Partitioners } from 'kafkajs';
import { createTopic, kafkaBrokers, produce, readAll, testKafka, uniqueTopic, waitUntilCaughtUp } from '../utils/kafka.js';
import { runCli, startService } from '../utils/processes.js';
import { expectEqualsFromScratch } from '../utils/read-models.js';
import { scenarioEvents, toBuffers } from '../utils/scenario.js';
import { KafkaProjectionConsumer } from '../../src/ingestion/kafka/kafka-projection.consumer.js';

import { jest } from '@jest/globals';

jest.setTimeout(180_000);

const expectSameAsFromScratch = (db: TestDatabase, values: Buffer[]) => expectEqualsFromScratch(db.dataSource, values);

const kafkaEnv = (topic: string, brokers = kafkaBrokers()) => ({
  KAFKA_BROKERS: brokers,
  KAFKA_TOPIC: topic,
  KAFKA_GROUP_ID: `g-${topic}`,
  KAFKA_SESSION_TIMEOUT_MS: '6000',
  CONSUMER_ENABLED: 'true',
});

describe('ingestion from Kafka (e2e, real broker and PostgreSQL)', () => {
  let db: TestDatabase;
  const apps: TestApp[] = [];

  beforeEach(async () => {
    db = await createTestDatabase('kafka');
  });
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
    await db?.drop();
  });

  it('publishes with the CLI to Kafka and serves the projected rows over HTTP', async () => {
    const topic = uniqueTopic('cli');
    const api = await startTestApp({ databaseUrl: db.url, env: kafkaEnv(topic) });
    apps.push(api);
    const published = await runCli(['publish', 'examples/events.ndjson'], { KAFKA_BROKERS: kafkaBrokers(), KAFKA_TOPIC: topic });
    expect(published.stderr).toContain(`published 18 event(s) to Kafka topic ${topic}`);
    expect(published.code).toBe(0);
    await expectEventually(async () => {
      const res = await api.get('/v2/customers', api.token('demo-app'));
      expect(res.body.paging.total).toBe(9);
    }, 60_000);
    const tx = await api.get('/v2/transactions?limit=1000', api.token('demo-app'));
    expect(tx.body.paging.total).toBe(11);
    await waitUntilCaughtUp(db.dataSource, topic);
  });

  it('dead-letters a poison message to the table and <topic>.dlq, and ingestion goes on', async () => {
    const topic = uniqueTopic('poison');
    await createTopic(topic, 1);
    const api = await startTestApp({ databaseUrl: db.url, env: kafkaEnv(topic) });
    apps.push(api);
    const before = toBuffers(scenarioEvents({ seed: 21, customers: 5, tag: 'p1' }));
    const after = toBuffers(scenarioEvents({ seed: 22, customers: 5, tag: 'p2' }));
    const poison = Buffer.from('{"specversion":"1.0","type":"transaction.updated"');
    await produce(topic, [...before, poison, ...after]);
    await waitUntilCaughtUp(db.dataSource, topic);

    const dead = await db.dataSource.query(`SELECT partition, "offset"::int AS offset, code, value FROM public.dead_letters WHERE topic = $1`, [topic]);
    expect(dead).toEqual([{ partition: 0, offset: before.length, code: 'not_json', value: poison }]);
    const dlq = await readAll(`${topic}.dlq`, 1);
    expect(dlq).toHaveLength(1);
    expect(dlq[0].value).toEqual(poison);
    expect(dlq[0].headers).toMatchObject({ 'dlq-reason-code': 'not_json', 'dlq-source-topic': topic, 'dlq-source-offset': String(before.length) });
    await expectSameAsFromScratch(db, [...before, ...after]);
  });

  it.each([
    ['between the database commit and the Kafka commit', 'after-db-commit:3'],
    ['before the database commit', 'before-db-commit:3'],
  ])('a consumer killed %s resumes with nothing missing and nothing doubled', async (_, failpoints) => {
    const topic = uniqueTopic('crash');
    await createTopic(topic, 3);
    const values = toBuffers(scenarioEvents({ seed: 31, customers: 300 }));
    await produce(topic, values.slice(0, 200));
    const env = { ...kafkaEnv(topic), DATABASE_URL: db.url, LOG_LEVEL: 'warn' };

    const doomed = startService({ ...env, PORT: String(await freePort()), FAILPOINTS: failpoints });
    await produce(topic, values.slice(200, 400));
    expect(await doomed.exited).toBe(-1); // SIGKILL
    const [{ n }] = await db.dataSource.query(`SELECT coalesce(sum(next_offset), 0)::int AS n FROM read_model.projection_offsets WHERE topic = $1`, [topic]);
    expect(n).toBeGreaterThan(0); // it did project something before dying

    await produce(topic, values.slice(400));
    const survivor = startService({ ...env, PORT: String(await freePort()) });
    try {
      await waitUntilCaughtUp(db.dataSource, topic, 90_000);
    } finally {
      await survivor.kill('SIGTERM');
    }
    await expectSameAsFromScratch(db, values);
  });

  it('two consumers in one group share partitions through rebalances without losing or doubling events', async () => {
    const topic = uniqueTopic('rebalance');
    await createTopic(topic, 4);
    const values = toBuffers(scenarioEvents({ seed: 41, customers: 400 }));
    const third = Math.ceil(values.length / 3);
    const reader = await startTestApp({ databaseUrl: db.url });
    apps.push(reader);
    const sync = followFeed(reader, ['app-1', 'app-2']);
    const first = await startTestApp({ databaseUrl: db.url, env: kafkaEnv(topic) });
    apps.push(first);
    await produce(topic, values.slice(0, third));
    const second = await startTestApp({ databaseUrl: db.url, env: kafkaEnv(topic) }); // rebalance: join
    apps.push(second);
    await produce(topic, values.slice(third, 2 * third));
    await first.close(); // rebalance: leave
    apps.splice(apps.indexOf(first), 1);
    await produce(topic, values.slice(2 * third));
    await waitUntilCaughtUp(db.dataSource, topic, 90_000);
    await expectSameAsFromScratch(db, values);
    await sync.expectListedRows(); // a change-feed client polling through the rebalances missed nothing
  });

  it('shares fetch rounds between a backlog and a partition at its head without losing or doubling events, through a rebalance', async () => {
    const topic = uniqueTopic('share');
    await createTopic(topic, 3);
    const values = toBuffers(scenarioEvents({ seed: 42, customers: 1500 }));
    const live = values.slice(0, 400);
    const backlog = values.slice(400);
    const holds = jest.spyOn(KafkaProjectionConsumer.prototype as unknown as { hold(): void }, 'hold');
    const producer = testKafka().producer({ createPartitioner: Partitioners.DefaultPartitioner, idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    try {
      // the backlog on partitions 1 and 2, in batches far above what a shared round applies
      for (let i = 0; i < backlog.length; i += 500) {
        await producer.send({ topic, acks: -1, messages: backlog.slice(i, i + 500).map((value, j) => ({ value, partition: 1 + ((i + j) % 2) })) });
      }
      // small fetches and shares, so backlog batches are cut (and their rests held) while partition 0 is at its head
      const env = { ...kafkaEnv(topic), KAFKA_MAX_BYTES_PER_PARTITION: '131072', KAFKA_ROUND_SHARE_MESSAGES: '40' };
      const first = await startTestApp({ databaseUrl: db.url, env });
      apps.push(first);
      // live traffic on partition 0 while the backlog is consumed; halfway, a second member joins
      // and the first leaves, so partitions move while rests are held
      for (let i = 0; i < live.length; i += 10) {
        if (i === 200) apps.push(await startTestApp({ databaseUrl: db.url, env }));
        if (i === 300) {
          await first.close();
          apps.splice(apps.indexOf(first), 1);
        }
        await producer.send({ topic, acks: -1, messages: live.slice(i, i + 10).map((value) => ({ value, partition: 0 })) });
        await new Promise((r) => setTimeout(r, 20));
      }
    } finally {
      await producer.disconnect();
    }
    await waitUntilCaughtUp(db.dataSource, topic, 90_000);
    await expectSameAsFromScratch(db, values);
    expect(holds).toHaveBeenCalled();
    holds.mockRestore();
  });

  it('recovers from a broker restart during ingest', async () => {
    const broker = await startKafkaBroker();
    try {
      const topic = uniqueTopic('restart');
      await createTopic(topic, 3, broker.brokers);
      const api = await startTestApp({ databaseUrl: db.url, env: kafkaEnv(topic, broker.brokers) });
      apps.push(api);
      const values = toBuffers(scenarioEvents({ seed: 51, customers: 300 }));
      const half = Math.floor(values.length / 2);
      await produce(topic, values.slice(0, half), broker.brokers);
      await broker.restart();
      await produce(topic, values.slice(half), broker.brokers);
      await waitUntilCaughtUp(db.dataSource, topic, 120_000, broker.brokers);
      await expectSameAsFromScratch(db, values);
      const ready = await api.get('/health/ready');
      expect(ready.body.details.consumer.status).toBe('up');
    } finally {
      await Promise.all(apps.splice(0).map((a) => a.close()));
      await broker.destroy();
    }
  });
});
