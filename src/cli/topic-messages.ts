import type { Kafka } from 'kafkajs';

export type TopicMessage = { key: Buffer | null; value: Buffer | null };

/** `${partition}:${offset}` */
export const messageAt = (partition: number, offset: bigint) => `${partition}:${offset}`;

/**
 * The messages at the given offsets of a topic, read by a throwaway consumer group that seeks to
 * each one (kafkajs has no fetch-by-offset outside a consumer) and is deleted afterwards. An offset
 * the topic does not hold (compacted, or beyond its end) is missing from the answer.
 */
export async function readMessagesAt(
  kafka: Kafka,
  topic: string,
  partitions: number[],
  wanted: { partition: number; offset: bigint }[],
  timeoutMs = 60_000,
): Promise<Map<string, TopicMessage>> {
  const found = new Map<string, TopicMessage>();
  if (wanted.length === 0) return found;
  const pending = new Map<number, bigint[]>();
  for (const w of wanted) pending.set(w.partition, [...(pending.get(w.partition) ?? []), w.offset]);
  // Once each (the first and the last of one message are the same offset), in order.
  for (const [p, offsets] of pending)
    pending.set(
      p,
      [...new Set(offsets)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
    );
  const groupId = `move-to-kafka-check-${process.pid}-${Date.now()}`;
  const consumer = kafka.consumer({ groupId, allowAutoTopicCreation: false, maxWaitTimeInMs: 100 });
  let finished!: () => void;
  const done = new Promise<void>((resolve) => (finished = resolve));
  const settle = (partition: number) => {
    pending.delete(partition);
    consumer.pause([{ topic, partitions: [partition] }]);
    if (pending.size === 0) finished();
  };
  try {
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        const offsets = pending.get(batch.partition);
        if (!offsets) return;
        for (const m of batch.messages) {
          const offset = BigInt(m.offset);
          while (offsets.length > 0 && offsets[0] < offset) offsets.shift(); // not in the topic
          if (offsets[0] === offset) {
            found.set(messageAt(batch.partition, offset), { key: m.key, value: m.value });
            offsets.shift();
          }
        }
        if (offsets.length === 0) settle(batch.partition);
        else if (BigInt(batch.lastOffset()) + 1n < offsets[0]) consumer.seek({ topic, partition: batch.partition, offset: String(offsets[0]) });
      },
    });
    for (const p of partitions) {
      const offsets = pending.get(p);
      if (offsets) consumer.seek({ topic, partition: p, offset: String(offsets[0]) });
      else consumer.pause([{ topic, partitions: [p] }]);
    }
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`reading the messages of topic ${topic} to compare with the embedded log took over ${timeoutMs / 1000} s`)),
        timeoutMs,
      );
    });
    try {
      await Promise.race([done, timeout]);
    } finally {
      clearTimeout(timer);
    }
    return found;
  } finally {
    await consumer.disconnect().catch(() => undefined);
    const admin = kafka.admin();
    await admin
      .connect()
      .then(() => admin.deleteGroups([groupId]))
      .catch(() => undefined)
      .finally(() => admin.disconnect().catch(() => undefined));
  }
}
