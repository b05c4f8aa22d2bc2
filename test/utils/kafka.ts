import { Kafka, logLevel, Partitioners } from 'kafkajs';
import type { DataSource } from 'typeorm';
import { expectEventually } from './expect-eventually.js';

export const kafkaBrokers = () => process.env.TEST_KAFKA_BROKERS!;
let topicSeq = 0;
export const uniqueTopic = (label: string) => `t-${label}-${process.pid}-${Date.now()}-${++topicSeq}`;

export function testKafka(brokers = kafkaBrokers()): Kafka {
  return new Kafka({ clientId: 'test', brokers: brokers.split(','), logLevel: logLevel.NOTHING, retry: { retries: 10, initialRetryTime: 200 } });
}

export async function createTopic(topic: string, partitions = 3, brokers = kafkaBrokers()): Promise<void> {
  const admin = testKafka(brokers).admin();
  await admin.connect();
  try {
    await admin.createTopics({
      topics: [
        { topic, numPartitions: partitions },
        { topic: `${topic}.dlq`, numPartitions: 1 },
      ],
      waitForLeaders: true,
    });
  } finally {
    await admin.disconnect();
  }
}

/** Produces raw values keyed like the publish command does (by receiptId when there is one). */
export async function produce(topic: string, values: Buffer[], brokers = kafkaBrokers()): Promise<void> {
  const producer = testKafka(brokers).producer({ createPartitioner: Partitioners.DefaultPartitioner, idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  try {
    for (let i = 0; i < values.length; i += 500) {
      await producer.send({
        topic,
        acks: -1,
        messages: values.slice(i, i + 500).map((value) => ({ key: receiptKey(value), value })),
      });
    }
  } finally {
    await producer.disconnect();
  }
}

function receiptKey(value: Buffer): string | null {
  try {
    return (JSON.parse(value.toString()) as { data?: { receiptId?: string } }).data?.receiptId ?? null;
  } catch {
    return null;
  }
}

export async function topicEndOffsets(topic: string, brokers = kafkaBrokers()): Promise<bigint> {
  const admin = testKafka(brokers).admin();
  await admin.connect();
  try {
    return (await admin.fetchTopicOffsets(topic)).reduce((sum, p) => sum + BigInt(p.high), 0n);
  } finally {
    await admin.disconnect();
  }
}

/** Waits until the offsets stored with the read models cover everything in the topic. */
export async function waitUntilCaughtUp(db: DataSource, topic: string, timeoutMs = 60_000, brokers = kafkaBrokers()): Promise<void> {
  const end = await topicEndOffsets(topic, brokers);
  await expectEventually(
    async () => {
      const [{ n }] = await db.query(`SELECT coalesce(sum(next_offset), 0)::text AS n FROM read_model.projection_offsets WHERE topic = $1`, [topic]);
      expect(BigInt(n)).toBe(end);
    },
    timeoutMs,
    200,
  );
}

export async function readAll(topic: string, expected: number, brokers = kafkaBrokers()): Promise<{ value: Buffer | null; headers: Record<string, string> }[]> {
  const consumer = testKafka(brokers).consumer({ groupId: `reader-${Date.now()}-${Math.random()}` });
  const seen: { value: Buffer | null; headers: Record<string, string> }[] = [];
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => {
      seen.push({ value: message.value, headers: Object.fromEntries(Object.entries(message.headers ?? {}).map(([k, v]) => [k, String(v)])) });
    },
  });
  try {
    await expectEventually(() => expect(seen.length).toBeGreaterThanOrEqual(expected), 30_000);
  } finally {
    await consumer.disconnect();
  }
  return seen;
}
