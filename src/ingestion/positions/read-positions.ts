import type { DataSource } from 'typeorm';
import type { AppConfig } from '../../config/app-config.js';
import { EMBEDDED_PARTITION, eventLogBounds } from '../../event-log/event-log.js';
import { createKafka } from '../kafka/kafka-client.js';
import type { PartitionPosition } from './log-positions.js';

/** The log's start and end per partition (Kafka topic or embedded log) with the offsets stored in `schema`. */
export async function readPositions(config: AppConfig, db: DataSource, schema = 'read_model'): Promise<{ topic: string; positions: PartitionPosition[] }> {
  const topic = config.kafka?.topic ?? config.eventLogTopic;
  const rows = (await db.query(`SELECT partition, next_offset::text AS next_offset FROM ${schema}.projection_offsets WHERE topic = $1`, [topic])) as {
    partition: number;
    next_offset: string;
  }[];
  const stored = new Map(rows.map((r) => [r.partition, BigInt(r.next_offset)]));
  let ends: { partition: number; low: bigint; high: bigint }[];
  if (config.kafka) {
    const admin = createKafka(config.kafka, '-offsets').admin();
    await admin.connect();
    try {
      ends = (await admin.fetchTopicOffsets(topic)).map((o) => ({ partition: o.partition, low: BigInt(o.low), high: BigInt(o.high) }));
    } finally {
      await admin.disconnect();
    }
  } else {
    ends = [{ partition: EMBEDDED_PARTITION, ...(await eventLogBounds(db, topic)) }];
  }
  const positions = ends
    .map((e) => ({ partition: e.partition, logStart: e.low, logEnd: e.high, stored: stored.get(e.partition) }))
    .sort((a, b) => a.partition - b.partition);
  return { topic, positions };
}
