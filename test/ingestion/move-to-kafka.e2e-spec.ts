import { jest } from '@jest/globals';
import { KafkaProjectionConsumer } from '../../src/ingestion/kafka/kafka-projection.consumer.js';
import { LIVE_PROJECTION_LOCK } from '../../src/database/advisory-locks.js';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { expectEventually } from '../utils/expect-eventually.js';
import { createTopic, kafkaBrokers, produce, testKafka, topicEndOffsets, uniqueTopic, waitUntilCaughtUp } from '../utils/kafka.js';
import { runCli, writeTempFile } from '../utils/processes.js';
import { expectEqualsFromScratch } from '../utils/read-models.js';
import { txEvent } from '../utils/events.js';
import { scenarioEvents, toNdjson } from '../utils/scenario.js';

jest.setTimeout(240_000);

const PARTITIONS = 3;

type TopicMessage = { partition: number; offset: number; value: string; timestamp: string };

/** The embedded log's messages of a topic with their timestamps as the embedded consumer reads them (appended_at, epoch ms). */
async function embeddedMessages(db: TestDatabase, topic: string): Promise<{ value: string; timestamp: string }[]> {
  const rows = (await db.dataSource.query(
    `SELECT value, (extract(epoch FROM appended_at) * 1000)::bigint::text AS timestamp FROM public.event_log WHERE topic = $1 ORDER BY "offset"`,
    [topic],
  )) as { value: Buffer; timestamp: string }[];
  return rows.map((r) => ({ value: r.value.toString(), timestamp: r.timestamp }));
}

const storedOffsets = (db: TestDatabase, topic: string) =>
  db.dataSource.query(`SELECT partition, next_offset::text AS n, last_message_sha1 FROM read_model.projection_offsets WHERE topic = $1 ORDER BY partition`, [
    topic,
  ]);

async function topicExists(topic: string): Promise<boolean> {
  const admin = testKafka().admin();
  await admin.connect();
  try {
    return (await admin.listTopics()).includes(topic);
  } finally {
    await admin.disconnect();
  }
}

/** Every message of the topic with where it lies and its timestamp, read by a throwaway consumer group. */
async function readTopic(topic: string, expected: number): Promise<TopicMessage[]> {
  const consumer = testKafka().consumer({ groupId: `move-reader-${Date.now()}-${Math.random()}` });
  const seen: TopicMessage[] = [];
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ partition, message }) =>
      void seen.push({ partition, offset: Number(message.offset), value: message.value!.toString(), timestamp: message.timestamp }),
  });
  try {
    await expectEventually(() => expect(seen.length).toBeGreaterThanOrEqual(expected), 30_000);
  } finally {
    await consumer.disconnect();
  }
  return seen.sort((a, b) => a.partition - b.partition || a.offset - b.offset);
}

describe('moving from the embedded event log to Kafka (e2e: real PostgreSQL and broker, the built CLI)', () => {
  let db: TestDatabase;
  const apps: TestApp[] = [];
  const topic = uniqueTopic('move');
  // The embedded log and the topic share KAFKA_TOPIC; the group is the service's.
  const embeddedEnv = () => ({ DATABASE_URL: db.url, KAFKA_TOPIC: topic });
  const kafkaEnv = () => ({ ...embeddedEnv(), KAFKA_BROKERS: kafkaBrokers(), KAFKA_GROUP_ID: `g-${topic}` });
  const serviceKafkaEnv = () => ({
    KAFKA_BROKERS: kafkaBrokers(),
    KAFKA_TOPIC: topic,
    KAFKA_GROUP_ID: `g-${topic}`,
    KAFKA_SESSION_TIMEOUT_MS: '6000',
    CONSUMER_ENABLED: 'true',
  });
  const embeddedCount = async () => Number((await db.dataSource.query(`SELECT count(*)::int AS n FROM public.event_log WHERE topic = $1`, [topic]))[0].n);
  const embeddedValues = async () =>
    ((await db.dataSource.query(`SELECT value FROM public.event_log WHERE topic = $1 ORDER BY "offset"`, [topic])) as { value: Buffer }[]).map((r) => r.value);
  const publish = async (events: unknown[], env: Record<string, string>) => {
    const r = await runCli(['publish', writeTempFile('events.ndjson', toNdjson(events))], env);
    expect(r.code).toBe(0);
  };
  const moveRefusals = (r: { code: number | null; stderr: string }, message: RegExp) => {
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toEqual([expect.stringMatching(message)]);
  };

  beforeAll(async () => {
    db = await createTestDatabase('move_kafka');
    await createTopic(topic, PARTITIONS);
  });
  afterAll(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
    await db?.drop();
  });

  const events = scenarioEvents({ seed: 39, customers: 60 });
  const projectedPart = events.slice(0, Math.floor(events.length * 0.6));
  const unprojectedPart = events.slice(projectedPart.length, Math.floor(events.length * 0.8));
  const kafkaPart = events.slice(projectedPart.length + unprojectedPart.length);

  it('copies the embedded log to the topic (killed once mid-way), switches the positions, and the service continues on Kafka with nothing lost, doubled, re-applied or skipped', async () => {
    // 1. A service on the embedded log projects the first events; more arrive after it stopped.
    const embedded = await startTestApp({ databaseUrl: db.url, env: { CONSUMER_ENABLED: 'true', KAFKA_TOPIC: topic, PROJECTION_BATCH_SIZE: '25' } });
    apps.push(embedded);
    await publish(projectedPart, embeddedEnv());
    await expectEventually(async () => {
      const [row] = await db.dataSource.query(`SELECT next_offset::int AS n FROM read_model.projection_offsets WHERE topic = $1`, [topic]);
      expect(row?.n).toBe(projectedPart.length);
    }, 60_000);

    // Refused while it consumes the embedded log, and without KAFKA_BROKERS.
    moveRefusals(await runCli(['move-to-kafka'], kafkaEnv()), /^error: the service is consuming the embedded event log of this database: stop it first/);
    moveRefusals(await runCli(['move-to-kafka'], embeddedEnv()), /^error: move-to-kafka needs KAFKA_BROKERS/);
    await apps.splice(apps.indexOf(embedded), 1)[0].close();
    await publish(unprojectedPart, embeddedEnv());
    const total = await embeddedCount();
    expect(total).toBe(projectedPart.length + unprojectedPart.length);

    // 2. Started on Kafka before the move: blocked, saying where the offsets came from and what to run
    //    (it said "the log ends before the stored offset (topic recreated or truncated)").
    const early = await startTestApp({ databaseUrl: db.url, env: serviceKafkaEnv() });
    apps.push(early);
    await expectEventually(() => {
      const health = early.app.get(KafkaProjectionConsumer).health();
      expect(health.state).toBe('blocked');
      expect(health.reason).toContain(
        `partition 0: stored offset ${projectedPart.length} is a position in this database's embedded event log (${total} events), not in Kafka topic ${topic}`,
      );
      expect(health.reason).toContain('npm run cli -- move-to-kafka');
    }, 60_000);
    // offsets show says the same (it said "the log ends before the stored offset (topic recreated or truncated)").
    const shown = await runCli(['offsets', 'show'], kafkaEnv());
    expect(shown.code).toBe(3);
    expect(shown.stdout).toContain(
      `partition 0: stored offset ${projectedPart.length} is a position in this database's embedded event log (${total} events), not in Kafka topic ${topic}`,
    );
    expect(shown.stdout).not.toContain('recreated or truncated');
    // ... and the move refuses to run beside it.
    moveRefusals(
      await runCli(['move-to-kafka'], kafkaEnv()),
      new RegExp(`^error: the service is consuming Kafka topic ${topic} \\(consumer group g-${topic} has 1 member\\(s\\)\\)`),
    );
    await apps.splice(apps.indexOf(early), 1)[0].close();
    expect(await topicEndOffsets(topic)).toBe(0n);

    // 3. The move, killed after its second acknowledged send, then run again: it continues.
    const killed = await runCli(['move-to-kafka', '--batch-size', '10'], { ...kafkaEnv(), FAILPOINTS: 'move-to-kafka-after-send:2' });
    expect(killed.code).toBeNull(); // SIGKILL
    expect(await topicEndOffsets(topic)).toBe(20n);
    const stored = await db.dataSource.query(`SELECT partition, next_offset::int AS n FROM read_model.projection_offsets WHERE topic = $1 ORDER BY partition`, [
      topic,
    ]);
    expect(stored).toEqual([{ partition: 0, n: projectedPart.length }]); // not switched yet

    const resumed = await runCli(['move-to-kafka', '--batch-size', '10'], kafkaEnv());
    expect(resumed.stderr).toBe('');
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toContain(
      `${total} event(s); Kafka topic ${topic} (${PARTITIONS} partition(s)) already holds 20 of them (a copy stopped earlier: continuing it)`,
    );
    expect(resumed.stdout).toContain(`sent ${total - 20} event(s)`);
    expect(resumed.stdout).toMatch(/switched the stored offsets from the embedded log's \(next \d+\) to the topic's/);
    expect(await topicEndOffsets(topic)).toBe(BigInt(total));

    // The topic holds the embedded log once, each receipt's events in embedded order on its partition,
    // each with its embedded timestamp (the future_time check compares with it; they were sent with the send's time).
    const values = (await embeddedValues()).map((v) => v.toString());
    const onTopic = await readTopic(topic, total);
    expect(onTopic).toHaveLength(total);
    expect(onTopic.map((m) => m.value).sort()).toEqual([...values].sort());
    expect(onTopic.map((m) => `${m.timestamp} ${m.value}`).sort()).toEqual((await embeddedMessages(db, topic)).map((m) => `${m.timestamp} ${m.value}`).sort());
    for (let p = 0; p < PARTITIONS; p++) {
      const here = onTopic.filter((m) => m.partition === p);
      expect(here.map((m) => m.offset)).toEqual(here.map((_, i) => i));
      const order = here.map((m) => values.indexOf(m.value));
      expect(order).toEqual([...order].sort((a, b) => a - b));
    }
    // Each partition's stored offset is the number of its messages the embedded consumer projected:
    // nothing re-applied (below it, only projected events), nothing skipped (from it, only unprojected ones).
    const projected = new Set(values.slice(0, projectedPart.length));
    const switched = await db.dataSource.query(
      `SELECT partition, next_offset::int AS n FROM read_model.projection_offsets WHERE topic = $1 ORDER BY partition`,
      [topic],
    );
    expect(switched).toEqual(
      [...Array(PARTITIONS).keys()].map((p) => {
        const here = onTopic.filter((m) => m.partition === p);
        const n = here.findIndex((m) => !projected.has(m.value));
        expect(here.slice(n === -1 ? here.length : n).every((m) => !projected.has(m.value))).toBe(true);
        return { partition: p, n: n === -1 ? here.length : n };
      }),
    );

    // 4. Already moved: run again, nothing is published and the positions stay.
    const again = await runCli(['move-to-kafka'], kafkaEnv());
    expect({ code: again.code, stderr: again.stderr }).toEqual({ code: 0, stderr: '' });
    expect(again.stdout).toContain(`already holds ${total} of them\n`);
    expect(again.stdout).toContain('sent 0 event(s)');
    expect(again.stdout).toContain("the offsets stored with the read models are already the topic's: left as they are");
    expect(await topicEndOffsets(topic)).toBe(BigInt(total));
    expect(
      await db.dataSource.query(`SELECT partition, next_offset::int AS n FROM read_model.projection_offsets WHERE topic = $1 ORDER BY partition`, [topic]),
    ).toEqual(switched);

    // 5. The service on Kafka: projects the unprojected rest, then events published to Kafka.
    const onKafka = await startTestApp({ databaseUrl: db.url, env: serviceKafkaEnv() });
    apps.push(onKafka);
    await waitUntilCaughtUp(db.dataSource, topic);
    expect(onKafka.app.get(KafkaProjectionConsumer).health().state).toBe('running');
    await publish(kafkaPart, kafkaEnv());
    expect(await topicEndOffsets(topic)).toBe(BigInt(total + kafkaPart.length));
    await waitUntilCaughtUp(db.dataSource, topic);
    // Every event once: the read models are one from-scratch projection of all of them.
    await expectEqualsFromScratch(db.dataSource, [...(await embeddedValues()), ...kafkaPart.map((e) => Buffer.from(JSON.stringify(e)))]);
    const totals = await onKafka.get('/v2/transactions?limit=1', onKafka.token('app-1'));
    const rows = await db.dataSource.query(`SELECT count(*)::int AS n FROM read_model.transactions WHERE app_id = 'app-1'`);
    expect(totals.body.paging.total).toBe(rows[0].n);

    // 6. Once the topic has moved on, a late rerun still publishes nothing and leaves the positions.
    await apps.splice(apps.indexOf(onKafka), 1)[0].close();
    const positions = await db.dataSource.query(
      `SELECT partition, next_offset::text AS n FROM read_model.projection_offsets WHERE topic = $1 ORDER BY partition`,
      [topic],
    );
    const late = await runCli(['move-to-kafka'], kafkaEnv());
    expect({ code: late.code, stderr: late.stderr }).toEqual({ code: 0, stderr: '' });
    expect(late.stdout).toContain('sent 0 event(s)');
    expect(await topicEndOffsets(topic)).toBe(BigInt(total + kafkaPart.length));
    expect(
      await db.dataSource.query(`SELECT partition, next_offset::text AS n FROM read_model.projection_offsets WHERE topic = $1 ORDER BY partition`, [topic]),
    ).toEqual(positions);
  });

  it('continues a move killed right after its first message (a partition holding one message of the copy)', async () => {
    const other = await createTestDatabase('move_kafka_one');
    const oneTopic = uniqueTopic('move-one');
    try {
      await createTopic(oneTopic, PARTITIONS);
      const env = { DATABASE_URL: other.url, KAFKA_TOPIC: oneTopic, KAFKA_BROKERS: kafkaBrokers(), KAFKA_GROUP_ID: `g-${oneTopic}` };
      const mine = scenarioEvents({ seed: 42, customers: 8 });
      expect((await runCli(['publish', writeTempFile('mine.ndjson', toNdjson(mine))], { DATABASE_URL: other.url, KAFKA_TOPIC: oneTopic })).code).toBe(0);
      expect((await runCli(['move-to-kafka', '--batch-size', '1'], { ...env, FAILPOINTS: 'move-to-kafka-after-send:1' })).code).toBeNull();
      expect(await topicEndOffsets(oneTopic)).toBe(1n);
      const r = await runCli(['move-to-kafka'], env);
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
      expect(r.stdout).toContain(`already holds 1 of them (a copy stopped earlier: continuing it)`);
      expect(await topicEndOffsets(oneTopic)).toBe(BigInt(mine.length));
      // nothing was projected: every partition starts at its beginning
      expect(
        await other.dataSource.query(
          `SELECT partition, next_offset::int AS n, last_message_sha1 FROM read_model.projection_offsets WHERE topic = $1 ORDER BY partition`,
          [oneTopic],
        ),
      ).toEqual([...Array(PARTITIONS).keys()].map((partition) => ({ partition, n: 0, last_message_sha1: null })));
    } finally {
      await other.drop();
    }
  });

  it('keeps the embedded timestamps: an event dead-lettered as too far ahead of its log time on the embedded log is not projected by a rebuild from Kafka either', async () => {
    const other = await createTestDatabase('move_kafka_time');
    const timeTopic = uniqueTopic('move-time');
    try {
      // Kept whatever its timestamps (as docs/operations.md asks): the broker's 7-day retention would
      // delete days-old messages at its next check.
      const admin = testKafka().admin();
      await admin.connect();
      await admin
        .createTopics({
          topics: [{ topic: timeTopic, numPartitions: PARTITIONS, configEntries: [{ name: 'retention.ms', value: '-1' }] }],
          waitForLeaders: true,
        })
        .finally(() => admin.disconnect());
      const env = { DATABASE_URL: other.url, KAFKA_TOPIC: timeTopic };
      const kafka = { ...env, KAFKA_BROKERS: kafkaBrokers(), KAFKA_GROUP_ID: `g-${timeTopic}` };
      const day = 86_400_000;
      const ordinary = [1, 2, 3].map((i) => txEvent({ id: `ok-${i}`, time: '2025-06-01T00:00:00Z', data: { transactionId: `apple:t-ok-${i}` } }));
      // In the past when published, but 3 days ahead of its log time once the log is 6 days old
      // (beyond EVENT_TIME_MAX_SKEW_MS, 1 day): a copy timed when sent would make it 3 days late instead.
      const ahead = txEvent({ id: 'ahead', time: new Date(Date.now() - 3 * day).toISOString(), data: { transactionId: 'apple:t-ahead' } });
      expect((await runCli(['publish', writeTempFile('time.ndjson', toNdjson([...ordinary, ahead]))], env)).code).toBe(0);
      await other.dataSource.query(`UPDATE public.event_log SET appended_at = appended_at - interval '6 days' WHERE topic = $1`, [timeTopic]);

      const embedded = await startTestApp({ databaseUrl: other.url, env: { CONSUMER_ENABLED: 'true', KAFKA_TOPIC: timeTopic } });
      try {
        await expectEventually(async () => {
          expect(await other.dataSource.query(`SELECT next_offset::int AS n FROM read_model.projection_offsets WHERE topic = $1`, [timeTopic])).toEqual([
            { n: 4 },
          ]);
        }, 60_000);
      } finally {
        await embedded.close();
      }
      expect(await other.dataSource.query(`SELECT "offset"::int AS offset, code FROM public.dead_letters WHERE topic = $1`, [timeTopic])).toEqual([
        { offset: 3, code: 'future_time' },
      ]);
      const projectedIds = `SELECT transaction_id FROM read_model.transactions ORDER BY transaction_id`;
      expect(await other.dataSource.query(projectedIds)).toEqual(
        ['apple:t-ok-1', 'apple:t-ok-2', 'apple:t-ok-3'].map((transaction_id) => ({ transaction_id })),
      );

      const moved = await runCli(['move-to-kafka'], kafka);
      expect({ code: moved.code, stderr: moved.stderr }).toEqual({ code: 0, stderr: '' });
      const onTopic = await readTopic(timeTopic, 4);
      expect(onTopic.map((m) => `${m.timestamp} ${m.value}`).sort()).toEqual(
        (await embeddedMessages(other, timeTopic)).map((m) => `${m.timestamp} ${m.value}`).sort(),
      );

      // A rebuild from the topic decides as the embedded consumer did.
      const rebuilt = await runCli(['rebuild'], kafka);
      expect({ code: rebuilt.code, stderr: rebuilt.stderr }).toEqual({ code: 0, stderr: '' });
      expect(await other.dataSource.query(projectedIds)).toEqual(
        ['apple:t-ok-1', 'apple:t-ok-2', 'apple:t-ok-3'].map((transaction_id) => ({ transaction_id })),
      );
    } finally {
      await other.drop();
    }
  });

  it('refuses up front (a rebuild running, a consumer in the group) creating no topic, and refuses events appended during the copy without switching; a rerun sends only those and switches', async () => {
    const other = await createTestDatabase('move_kafka_append');
    const appendTopic = uniqueTopic('move-append');
    const env = { DATABASE_URL: other.url, KAFKA_TOPIC: appendTopic };
    const kafka = { ...env, KAFKA_BROKERS: kafkaBrokers(), KAFKA_GROUP_ID: `g-${appendTopic}` };
    const mine = scenarioEvents({ seed: 44, customers: 12 });
    const later = scenarioEvents({ seed: 45, customers: 1 });
    const lock = other.dataSource.createQueryRunner();
    const member = testKafka().consumer({ groupId: `g-${appendTopic}` });
    try {
      expect((await runCli(['publish', writeTempFile('append.ndjson', toNdjson(mine))], env)).code).toBe(0);
      const before = await storedOffsets(other, appendTopic);

      // A rebuild running on the embedded log's positions.
      const [{ id }] = await other.dataSource.query(
        `INSERT INTO public.rebuilds (kind, schema_name, status, target_offsets, owner) VALUES ('rebuild', 'read_model_next', 'running', '{}', 'test') RETURNING id::text AS id`,
      );
      moveRefusals(await runCli(['move-to-kafka'], kafka), new RegExp(`^error: a rebuild \\(#${id}\\) is running on the embedded log's positions`));
      expect(await topicExists(appendTopic)).toBe(false);
      await other.dataSource.query(`UPDATE public.rebuilds SET status = 'aborted', finished_at = now() WHERE id = $1`, [id]);

      // A member in the service's consumer group (here reading another topic): refused before the topic is created (it was created first).
      await member.connect();
      await member.subscribe({ topic, fromBeginning: false });
      await member.run({ eachMessage: async () => undefined });
      await expectEventually(async () => {
        const admin = testKafka().admin();
        await admin.connect();
        try {
          expect((await admin.describeGroups([`g-${appendTopic}`])).groups[0].members).toHaveLength(1);
        } finally {
          await admin.disconnect();
        }
      }, 30_000);
      moveRefusals(
        await runCli(['move-to-kafka'], kafka),
        new RegExp(`^error: the service is consuming Kafka topic ${appendTopic} \\(consumer group g-${appendTopic} has 1 member\\(s\\)\\)`),
      );
      expect(await topicExists(appendTopic)).toBe(false);
      await member.disconnect();
      expect(await storedOffsets(other, appendTopic)).toEqual(before);

      // Events appended after the copy, before the switch: the switch waits for the live projection's
      // lock, held here until they are in.
      await lock.connect();
      await lock.query('SELECT pg_advisory_lock($1)', [LIVE_PROJECTION_LOCK]);
      const running = runCli(['move-to-kafka'], kafka);
      await expectEventually(async () => {
        const waiting = await other.dataSource.query(
          `SELECT 1 FROM pg_stat_activity WHERE application_name LIKE '%move-to-kafka%' AND wait_event_type = 'Lock' AND datname = current_database()`,
        );
        expect(waiting).toHaveLength(1);
      }, 60_000);
      expect(await topicEndOffsets(appendTopic)).toBe(BigInt(mine.length));
      expect((await runCli(['publish', writeTempFile('later.ndjson', toNdjson(later))], env)).code).toBe(0);
      await lock.query('SELECT pg_advisory_unlock($1)', [LIVE_PROJECTION_LOCK]);
      moveRefusals(
        await running,
        new RegExp(`^error: ${later.length} event\\(s\\) were appended to the embedded log during the move .*positions were not switched$`),
      );
      expect(await storedOffsets(other, appendTopic)).toEqual(before);
      expect(await topicEndOffsets(appendTopic)).toBe(BigInt(mine.length));

      const rerun = await runCli(['move-to-kafka'], kafka);
      expect({ code: rerun.code, stderr: rerun.stderr }).toEqual({ code: 0, stderr: '' });
      expect(rerun.stdout).toContain(
        `${mine.length + later.length} event(s); Kafka topic ${appendTopic} (${PARTITIONS} partition(s)) already holds ${mine.length} of them (a copy stopped earlier: continuing it)`,
      );
      expect(rerun.stdout).toContain(`sent ${later.length} event(s)`);
      expect(await topicEndOffsets(appendTopic)).toBe(BigInt(mine.length + later.length));
      // nothing was projected: every partition of the topic (created by the move with the test broker's default count, PARTITIONS) from its start
      expect(await storedOffsets(other, appendTopic)).toEqual(
        [...Array(PARTITIONS).keys()].map((partition) => ({ partition, n: '0', last_message_sha1: null })),
      );
    } finally {
      await member.disconnect().catch(() => undefined);
      await lock.release().catch(() => undefined);
      await other.drop();
    }
  });

  it("refuses a topic that holds events other than the embedded log's, changing nothing", async () => {
    const other = await createTestDatabase('move_kafka_other');
    const foreignTopic = uniqueTopic('move-foreign');
    try {
      await createTopic(foreignTopic, PARTITIONS);
      const mine = scenarioEvents({ seed: 40, customers: 10 });
      const env = { DATABASE_URL: other.url, KAFKA_TOPIC: foreignTopic };
      expect((await runCli(['publish', writeTempFile('mine.ndjson', toNdjson(mine))], env)).code).toBe(0);
      // Someone else's events, published to Kafka directly.
      await produce(
        foreignTopic,
        scenarioEvents({ seed: 41, customers: 10 }).map((e) => Buffer.from(JSON.stringify(e))),
      );
      const before = await topicEndOffsets(foreignTopic);
      const r = await runCli(['move-to-kafka'], { ...env, KAFKA_BROKERS: kafkaBrokers(), KAFKA_GROUP_ID: `g-${foreignTopic}` });
      moveRefusals(r, new RegExp(`^error: Kafka topic ${foreignTopic} already holds events that are not the embedded log's`));
      expect(await topicEndOffsets(foreignTopic)).toBe(before);
      expect(
        await other.dataSource.query(`SELECT count(*)::int AS n FROM read_model.projection_offsets WHERE topic = $1 AND partition <> 0`, [foreignTopic]),
      ).toEqual([{ n: 0 }]);
    } finally {
      await other.drop();
    }
  });
});
