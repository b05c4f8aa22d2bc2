import { Partitioners } from 'kafkajs';
import { DataSource } from 'typeorm';
import type { AppConfig } from '../config/app-config.js';
import { dataSourceOptions } from '../database/data-source-options.js';
import { openDatabaseServer } from '../database/database-server.js';
import { runMigrations } from '../database/migrate.js';
import { appendToEventLog } from '../event-log/event-log.js';
import { createKafka } from '../ingestion/kafka/kafka-client.js';

export type EventSink = { send(messages: { key: string; value: Buffer }[]): Promise<void>; close(): Promise<void> };

/** Where `publish` appends: the Kafka topic, or the embedded log table when no brokers are set. */
export async function openEventSink(config: AppConfig): Promise<EventSink> {
  if (config.kafka) {
    const topic = config.kafka.topic;
    const producer = createKafka(config.kafka, '-publish').producer({
      idempotent: true,
      maxInFlightRequests: 1,
      createPartitioner: Partitioners.DefaultPartitioner,
    });
    await producer.connect();
    return {
      send: async (messages) => {
        await producer.send({ topic, acks: -1, messages });
      },
      close: () => producer.disconnect(),
    };
  }
  const server = await openDatabaseServer(config);
  const db = await new DataSource(dataSourceOptions(server.url, { poolSize: 2, applicationName: 'publish' })).initialize();
  await runMigrations(db);
  return {
    send: async (messages) => {
      await appendToEventLog(db, config.eventLogTopic, messages);
    },
    close: async () => {
      await db.destroy();
      await server.stop();
    },
  };
}
