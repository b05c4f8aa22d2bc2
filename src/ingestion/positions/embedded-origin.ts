import type { DataSource } from 'typeorm';
import { EMBEDDED_PARTITION, eventLogBounds } from '../../event-log/event-log.js';
import { messageSha1 } from '../../events/log-batch.js';

/** The command that copies the embedded log to Kafka and switches the stored positions. */
export const MOVE_TO_KAFKA_COMMAND = 'npm run cli -- move-to-kafka';

/**
 * Whether a stored position is one in this database's embedded event log, which shares the topic
 * name with the Kafka topic (both are KAFKA_TOPIC): a partition-0 offset within the embedded log
 * whose last projected message is the embedded one at that offset (when the hash is kept). The
 * embedded log's end when it is, for the message; undefined when not (or nothing was ever appended).
 */
export async function embeddedLogPosition(
  db: DataSource,
  topic: string,
  partition: number,
  stored: bigint | undefined,
  lastMessageSha1: Buffer | null | undefined,
): Promise<{ logEnd: bigint } | undefined> {
  if (partition !== EMBEDDED_PARTITION || stored === undefined) return undefined;
  const { high } = await eventLogBounds(db, topic);
  if (high === 0n || stored > high) return undefined;
  if (stored > 0n && lastMessageSha1) {
    const [row] = (await db.query(`SELECT value FROM public.event_log WHERE topic = $1 AND partition = $2 AND "offset" = $3`, [
      topic,
      partition,
      String(stored - 1n),
    ])) as { value: Buffer }[];
    if (!row || !messageSha1(row.value).equals(lastMessageSha1)) return undefined;
  }
  return { logEnd: high };
}

/** Why a Kafka partition whose stored position came from the embedded log cannot be consumed, and the way on. */
export function describeEmbeddedPosition(
  topic: string,
  partition: number,
  stored: bigint,
  embeddedEnd: bigint,
  kafkaLog: { logStart: bigint; logEnd: bigint },
): string {
  return (
    `partition ${partition}: stored offset ${stored} is a position in this database's embedded event log (${embeddedEnd} events), ` +
    `not in Kafka topic ${topic} (log ${kafkaLog.logStart}..${kafkaLog.logEnd}): the read models were fed by the embedded log; ` +
    `copy it to the topic and switch the stored positions with \`${MOVE_TO_KAFKA_COMMAND}\` (docs/operations.md, "Moving from the embedded log to Kafka")`
  );
}
