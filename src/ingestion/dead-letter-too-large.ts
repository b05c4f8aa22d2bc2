import type { DataSource } from 'typeorm';
import { RejectCode } from '../events/decode-event.js';
import { LIVE_PROJECTION_LOCK } from '../database/advisory-locks.js';
import { LIVE_SCHEMA } from '../projection/apply-batch.js';
import type { BatchOutcome, DeadLetter } from '../events/log-batch.js';
import { sql } from '../projection/apply-batch.sql.js';

export type TooLargeMessage = {
  topic: string;
  partition: number;
  offset: string;
  /** Value and key together, in bytes. */
  bytes: number;
  /** What the dead letter keeps: at most the first EVENT_MAX_BYTES of each. */
  key: Buffer | null;
  value: Buffer;
  /** Identifies the message on resume (Kafka's anchor check); null when the log does not check it. */
  sha1: Buffer | null;
};

/**
 * Dead-letters one message over EVENT_MAX_BYTES (too_large) and moves its partition's offset past
 * it, in one transaction, under the same rules as a batch (applyBatch): below the stored offset it
 * was handled before; beyond it, it would leave a hole ('gap'), unless `follows` (the offset of the
 * message before it in the same read) is already projected, the offsets between them not existing.
 * The message is never decoded: nothing of it beyond what the dead letter keeps need be in memory.
 */
export async function deadLetterTooLarge(
  db: DataSource,
  message: TooLargeMessage,
  maxBytes: number,
  options: { schema?: string; follows?: string; beforeCommit?: (deadLetters: readonly DeadLetter[]) => Promise<void> } = {},
): Promise<BatchOutcome> {
  const schema = options.schema ?? LIVE_SCHEMA;
  const q = sql(schema);
  const letter: DeadLetter = {
    topic: message.topic,
    partition: message.partition,
    offset: message.offset,
    key: message.key && message.key.subarray(0, maxBytes),
    value: message.value.subarray(0, maxBytes),
    code: RejectCode.TooLarge,
    reason: `${message.bytes} bytes; at most ${maxBytes} (EVENT_MAX_BYTES); the first ${Math.min(maxBytes, message.value.length)} bytes of the value are kept`,
  };
  return db.transaction(async (m): Promise<BatchOutcome> => {
    if (schema === LIVE_SCHEMA) await m.query('SELECT pg_advisory_xact_lock_shared($1)', [LIVE_PROJECTION_LOCK]);
    const [{ next_offset: stored }] = (await m.query(q.lockOffset, [message.topic, message.partition])) as { next_offset: string }[];
    const offset = BigInt(message.offset);
    if (offset < BigInt(stored)) return { kind: 'applied', nextOffset: stored, applied: [], alreadyProjected: 1, deadLetters: [] };
    if (offset > BigInt(stored) && (options.follows === undefined || BigInt(options.follows) >= BigInt(stored))) return { kind: 'gap', storedOffset: stored };
    await m.query(q.insertDeadLetters, [letter.topic, letter.partition, [letter.offset], [letter.key], [letter.value], [letter.code], [letter.reason]]);
    const nextOffset = (offset + 1n).toString();
    await m.query(q.storeOffset, [message.topic, message.partition, nextOffset, message.sha1]);
    await options.beforeCommit?.([letter]);
    return { kind: 'applied', nextOffset, applied: [], alreadyProjected: 0, deadLetters: [letter] };
  });
}
