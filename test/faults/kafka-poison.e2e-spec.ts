import { jest } from '@jest/globals';
import { Partitioners } from 'kafkajs';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { txEvent } from '../utils/events.js';
import { createTopic, kafkaBrokers, readAll, testKafka, uniqueTopic, waitUntilCaughtUp } from '../utils/kafka.js';
import { runCli, writeTempFile } from '../utils/processes.js';

// Messages that once stalled a partition: a refused one whose key holds a NUL byte (the dead-letter
// row could not be written), one near the broker's size limit (its .dlq copy with headers no longer
// fitted). Both are dead-lettered and every message after them is projected.

jest.setTimeout(180_000);

describe('poison messages on Kafka (e2e, real broker and PostgreSQL)', () => {
  let db: TestDatabase;
  let api: TestApp;
  let topic: string;

  beforeAll(async () => {
    db = await createTestDatabase('kpoison');
    topic = uniqueTopic('poison');
    await createTopic(topic, 1);
    api = await startTestApp({
      databaseUrl: db.url,
      env: { CONSUMER_ENABLED: 'true', KAFKA_BROKERS: kafkaBrokers(), KAFKA_TOPIC: topic, KAFKA_GROUP_ID: `g-${topic}` },
    });
  });
  afterAll(async () => {
    await api?.close();
    await db?.drop();
  });

  it('dead-letters a NUL-keyed refusal and a near-limit refusal, truncating the .dlq copy, and goes on', async () => {
    const good = (n: number) => Buffer.from(JSON.stringify(txEvent({ app: 'kp', time: '2024-01-01T00:00:00Z', data: { transactionId: `apple:kp-${n}` } })));
    const nulKey = Buffer.from([0x72, 0x00, 0x31]);
    const huge = Buffer.alloc(1_048_000, 0x7b); // '{{{...': not JSON; fits message.max.bytes alone, not with the .dlq headers
    const producer = testKafka().producer({ createPartitioner: Partitioners.DefaultPartitioner });
    await producer.connect();
    for (const message of [{ value: good(1) }, { key: nulKey, value: Buffer.from('{oops') }, { value: huge }, { value: good(2) }]) {
      await producer.send({ topic, acks: -1, messages: [message] });
    }
    await producer.disconnect();

    await waitUntilCaughtUp(db.dataSource, topic, 90_000);
    const dead = await db.dataSource.query(
      `SELECT "offset"::int AS offset, code, key, length(value) AS size FROM public.dead_letters WHERE topic = $1 ORDER BY "offset"`,
      [topic],
    );
    expect(dead).toEqual([
      { offset: 1, code: 'not_json', key: nulKey, size: 5 },
      { offset: 2, code: 'not_json', key: null, size: 1_048_000 },
    ]);
    expect((await api.get('/v2/transactions', api.token('kp'))).body.paging.total).toBe(2);
    const copies = await readAll(`${topic}.dlq`, 2);
    const big = copies.find((c) => c.headers['dlq-source-offset'] === '2')!;
    expect(big.headers).toMatchObject({ 'dlq-truncated': 'true', 'dlq-original-bytes': '1048000', 'dlq-reason-code': 'not_json' });
    expect(big.value!.length).toBeLessThan(1_048_000);
  });

  it('publish refuses an over-sized line by number, sends the valid ones around it, and says what was sent', async () => {
    const line = (n: number, extra: Record<string, unknown> = {}) =>
      JSON.stringify(txEvent({ app: 'kp-cli', time: '2024-01-01T00:00:00Z', data: { transactionId: `apple:cli-${n}`, ...extra } }));
    const file = writeTempFile('big.ndjson', [line(1), line(2, { padding: 'x'.repeat(1_100_000) }), line(3)].join('\n') + '\n');
    const result = await runCli(['publish', file], { KAFKA_BROKERS: kafkaBrokers(), KAFKA_TOPIC: topic });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/line 2: refused \(too_large\): 1100\d+ bytes; the broker takes messages up to 1048588 bytes/);
    expect(result.stderr).toContain('published 2 event(s)');
    await waitUntilCaughtUp(db.dataSource, topic, 60_000);
    expect((await api.get('/v2/transactions', api.token('kp-cli'))).body.paging.total).toBe(2);
  });
});
