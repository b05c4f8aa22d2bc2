import type { DataSource } from 'typeorm';
import type { LogMessage } from '../projection/apply-batch.js';
import { eventLogSql } from './event-log.sql.js';

/** The embedded log has a single partition per topic: order is total, as one Kafka partition's is. */
export const EMBEDDED_PARTITION = 0;

export type OutgoingMessage = { key: string | null; value: Buffer };

export async function appendToEventLog(db: DataSource, topic: string, messages: readonly OutgoingMessage[]): Promise<string> {
  return db.transaction(async (m) => {
    await m.query(eventLogSql.ensureHead, [topic, EMBEDDED_PARTITION]);
    const [{ first_offset }] = (await m.query(eventLogSql.reserve, [topic, EMBEDDED_PARTITION, messages.length])) as { first_offset: string }[];
    await m.query(eventLogSql.append, [
      topic,
      EMBEDDED_PARTITION,
      first_offset,
      messages.map((msg) => msg.key),
      messages.map((msg) => msg.value),
    ]);
    await m.query(eventLogSql.notify, [topic]);
    return first_offset;
  });
}

export async function readEventLog(db: DataSource, topic: string, partition: number, fromOffset: string, limit: number): Promise<LogMessage[]> {
  return db.query(eventLogSql.read, [topic, partition, fromOffset, limit]);
}

/** Next offset to be written per partition (Kafka's "log end offset"). */
export async function eventLogEndOffsets(db: DataSource, topic: string): Promise<Map<number, string>> {
  const rows: { partition: number; next_offset: string }[] = await db.query(eventLogSql.endOffsets, [topic]);
  return new Map(rows.map((r) => [r.partition, r.next_offset]));
}

/**
 * The first offset the partition still holds (its end when empty, like Kafka's low watermark) and
 * the next one it will write, in one query.
 */
export async function eventLogBounds(db: DataSource, topic: string, partition = EMBEDDED_PARTITION): Promise<{ low: bigint; high: bigint }> {
  const [row] = (await db.query(eventLogSql.bounds, [topic, partition])) as { low: string; high: string }[];
  return { low: BigInt(row?.low ?? 0), high: BigInt(row?.high ?? 0) };
}
