import { Partitioners } from 'kafkajs';
import type { DataSource } from 'typeorm';
import type { AppConfig } from '../config/app-config.js';
import { resolveAccountTokens } from '../customers/account-tokens/account-tokens.js';
import { yieldToAppLinks } from '../customers/receipt-links/app-links.js';
import { sealEvents } from '../customers/crypto-shredding/sealed-username.js';
import { openDatabase } from '../database/open-database.js';
import { appendToEventLog } from '../event-log/event-log.js';
import { createKafka } from '../ingestion/kafka/kafka-client.js';

/** A partition given with a message places it there instead of the partitioner (Kafka only). */
/** timestamp (epoch ms, Kafka only): what the log received it at; unset, the producer's clock. */
export type SinkMessage = { key: string | null; value: Buffer; partition?: number; timestamp?: string };

export type EventSink = {
  send(messages: SinkMessage[]): Promise<void>;
  close(): Promise<void>;
  /** Bytes of values one send should carry at most (a single larger message goes alone). */
  chunkBytes: number;
};

/** One append to the embedded log: a statement's parameters are held whole, in hex, by the driver. */
const EMBEDDED_CHUNK_BYTES = 4 * 1024 * 1024;

/** Where `publish` appends: the Kafka topic, or the embedded log table when no brokers are set. */
export async function openEventSink(config: AppConfig): Promise<EventSink> {
  if (config.kafka) return openKafkaSink(config, { idempotent: false, clientIdSuffix: '-publish' });
  const { db, close } = await openDatabase(config, 'publish');
  return {
    send: async (messages) => {
      await appendToEventLog(db, config.eventLogTopic, messages);
    },
    close,
    chunkBytes: EMBEDDED_CHUNK_BYTES,
  };
}

/**
 * The Kafka topic KAFKA_TOPIC as a sink: one request in flight, acks from every in-sync replica,
 * keyed messages placed by kafkajs' default partitioner (the contract's keys decide the partition).
 */
export async function openKafkaSink(config: AppConfig, options: { idempotent: boolean; clientIdSuffix: string }): Promise<EventSink> {
  const settings = config.kafka!;
  const topic = settings.topic;
  // publish is not idempotent: kafkajs wants unlimited retries for that, and a CLI should fail
  // instead of hanging. A message sent twice on a retry is harmless there: the projection applies
  // each event id once. move-to-kafka must not double a message, and is resumable when stopped.
  const producer = createKafka(settings, options.clientIdSuffix).producer({
    maxInFlightRequests: 1,
    createPartitioner: Partitioners.DefaultPartitioner,
    // kafkajs keeps an idempotent producer's guarantee only with unlimited retries; the caller bounds the wait.
    ...(options.idempotent ? { idempotent: true, retry: { retries: Number.MAX_SAFE_INTEGER } } : {}),
  });
  await producer.connect();
  return {
    send: async (messages) => {
      await producer.send({ topic, acks: -1, messages });
    },
    close: () => producer.disconnect(),
    // Kafka refuses a record batch over message.max.bytes: chunks well under it keep valid lines
    // from sharing a batch that is refused.
    chunkBytes: Math.floor(config.eventMaxBytes / 2),
  };
}

/**
 * The same sink, for events the service writes itself (imports): an account token a store sent back
 * names its username again (account-tokens.ts), a store's link yields to an app's (app-links.ts),
 * and with CRYPTO_SHREDDING the usernames are sealed (docs/privacy.md). Values that are not JSON
 * pass as they are.
 */
export function storeEventSink(db: DataSource, sink: EventSink, o: { seal: boolean }): EventSink {
  return {
    ...sink,
    send: async (messages) => {
      const events = messages.map((m) => {
        try {
          return JSON.parse(m.value.toString('utf8')) as Record<string, unknown>;
        } catch {
          return undefined;
        }
      });
      const parsed = events.filter((e): e is Record<string, unknown> => e !== undefined && typeof e === 'object' && e !== null);
      await resolveAccountTokens(db, parsed);
      const kept = new Set(await yieldToAppLinks(db, parsed));
      if (o.seal) await sealEvents(db, [...kept]);
      const sent = messages.flatMap((m, i) => {
        const event = events[i];
        if (event === undefined) return [m];
        return kept.has(event) ? [{ ...m, value: Buffer.from(JSON.stringify(event)) }] : [];
      });
      if (sent.length > 0) await sink.send(sent);
    },
  };
}
