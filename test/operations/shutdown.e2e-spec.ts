import { jest } from '@jest/globals';
import { freePort } from '../kafka/broker.mjs';
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

  it('on SIGTERM mid-ingest, finishes the batch in flight, commits it to PostgreSQL and Kafka, and exits 0', async () => {
    const topic = uniqueTopic('sigterm');
    const groupId = `g-${topic}`;
    await createTopic(topic, 3);
    await produce(topic, toBuffers(scenarioEvents({ seed: 91, customers: 1500 })));
    const service = startService({
      DATABASE_URL: db.url,
      PORT: String(await freePort()),
      KAFKA_BROKERS: kafkaBrokers(),
      KAFKA_TOPIC: topic,
      KAFKA_GROUP_ID: groupId,
      KAFKA_SESSION_TIMEOUT_MS: '6000',
      KAFKA_MAX_BYTES_PER_PARTITION: '8192', // many small batches, so one is in flight when the signal comes
    });
    await expectEventually(async () => {
      const [{ n }] = await db.dataSource.query(`SELECT coalesce(sum(next_offset), 0)::int AS n FROM read_model.projection_offsets WHERE topic = $1`, [topic]);
      expect(n).toBeGreaterThan(0);
    }, 60_000, 20);

    expect(await service.kill('SIGTERM')).toBe(0);

    const stored: { partition: number; next_offset: string }[] = await db.dataSource.query(
      `SELECT partition, next_offset::text AS next_offset FROM read_model.projection_offsets WHERE topic = $1 ORDER BY partition`,
      [topic],
    );
    const admin = testKafka().admin();
    await admin.connect();
    try {
      const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
      const kafka = new Map(committed.partitions.map((p) => [p.partition, p.offset]));
      // every batch the database committed was also committed to Kafka before the process exited
      for (const s of stored) expect(kafka.get(s.partition)).toBe(s.next_offset);
      const end = (await admin.fetchTopicOffsets(topic)).reduce((sum, p) => sum + Number(p.high), 0);
      expect(stored.reduce((sum, s) => sum + Number(s.next_offset), 0)).toBeLessThan(end); // it really stopped mid-stream
    } finally {
      await admin.disconnect();
    }
  });
});
