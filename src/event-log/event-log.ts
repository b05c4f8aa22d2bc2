import type { DataSource } from 'typeorm';
import type { LogMessage } from '../events/log-batch.js';
import { eventLogSql } from './event-log.sql.js';

/** The embedded log has a single partition per topic: order is total, as one Kafka partition's is. */
export const EMBEDDED_PARTITION = 0;

export type OutgoingMessage = { key: string | null; value: Buffer };

/** Rows per INSERT: two parameters each, PostgreSQL takes at most 65535. */
const APPEND_ROWS = 1000;

export async function appendToEventLog(db: DataSource, topic: string, messages: readonly OutgoingMessage[]): Promise<string> {
  return db.transaction(async (m) => {
    await m.query(eventLogSql.ensureHead, [topic, EMBEDDED_PARTITION]);
    const [{ first_offset }] = (await m.query(eventLogSql.reserve, [topic, EMBEDDED_PARTITION, messages.length])) as { first_offset: string }[];
    for (let i = 0; i < messages.length; i += APPEND_ROWS) {
      const rows = messages.slice(i, i + APPEND_ROWS);
      const offset = (BigInt(first_offset) + BigInt(i)).toString();
      await m.query(eventLogSql.append(rows.length), [topic, EMBEDDED_PARTITION, offset, ...rows.flatMap((msg) => [msg.key, msg.value])]);
    }
    await m.query(eventLogSql.notify, [topic]);
    return first_offset;
  });
}

/** Bytes a read may load: per message (value and key), and per batch (the first message always fits). */
export type ReadBounds = { messageBytes: number; batchBytes: number };

export type EventLogBatch = {
  /** Consecutive messages from the offset asked for: at most `limit`, within the bounds. */
  messages: LogMessage[];
  /** The message at the offset asked for when it is over `messageBytes`: not read (messages is empty). */
  tooLarge?: { offset: string; bytes: number };
  /** Messages follow the batch already: read again without waiting. */
  more: boolean;
};

/** Reads a batch holding at most `bounds` bytes in memory, whatever the rows the log holds. */
export async function readEventLogBatch(
  db: DataSource,
  topic: string,
  partition: number,
  fromOffset: string,
  limit: number,
  bounds: ReadBounds,
): Promise<EventLogBatch> {
  const rows = (await db.query(eventLogSql.read, [topic, partition, fromOffset, limit, bounds.messageBytes, bounds.batchBytes])) as (LogMessage & {
    bytes: string;
  })[];
  const read = rows.findIndex((r) => r.value === null);
  const messages = (read === -1 ? rows : rows.slice(0, read)).map(({ offset, key, value, timestamp }) => ({ offset, key, value, timestamp }));
  const first = rows[0];
  const tooLarge = read === 0 ? { offset: first.offset, bytes: Number(first.bytes) } : undefined;
  return { messages, tooLarge, more: read !== -1 || rows.length === limit };
}

export async function readEventLog(db: DataSource, topic: string, partition: number, fromOffset: string, limit: number): Promise<LogMessage[]> {
  return (await readEventLogBatch(db, topic, partition, fromOffset, limit, { messageBytes: Number.MAX_SAFE_INTEGER, batchBytes: Number.MAX_SAFE_INTEGER }))
    .messages;
}

/** The size of one message and the first `bytes` bytes of its key and value: what a dead letter of it keeps. */
export async function readEventLogHead(
  db: DataSource,
  topic: string,
  partition: number,
  offset: string,
  bytes: number,
): Promise<{ bytes: number; key: Buffer | null; value: Buffer } | undefined> {
  const [row] = (await db.query(eventLogSql.readHead, [topic, partition, offset, bytes])) as { bytes: string; key: Buffer | null; value: Buffer }[];
  return row && { bytes: Number(row.bytes), key: row.key, value: row.value };
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
