import { Partitioners, type Producer } from 'kafkajs';
import type { DataSource } from 'typeorm';
import type { AppConfig } from '../config/app-config.js';
import { createKafka } from '../ingestion/kafka/kafka-client.js';
import { appendToEventLog } from './event-log.js';

export type LogMessage = { key: string; value: Buffer };

/**
 * Appends messages to the log the service consumes: the Kafka topic (acks from every in-sync
 * replica, a producer connected on first use and again after a failed connect) or the embedded
 * event log. For the service's own writers (store notifications, erasures); the CLI has its sink.
 */
export class LogWriter {
  private producer?: Promise<Producer>;

  constructor(
    private readonly config: AppConfig,
    private readonly db: DataSource,
    /** Appended to the Kafka client id, naming the writer in the broker's logs. */
    private readonly clientIdSuffix: string,
  ) {}

  /** What the log is, for messages to callers: 'Kafka' or 'PostgreSQL'. */
  get store(): 'Kafka' | 'PostgreSQL' {
    return this.config.kafka ? 'Kafka' : 'PostgreSQL';
  }

  async append(messages: LogMessage[]): Promise<void> {
    if (this.config.kafka) {
      const producer = await this.connectedProducer();
      await producer.send({ topic: this.config.kafka.topic, acks: -1, messages });
    } else {
      await appendToEventLog(this.db, this.config.eventLogTopic, messages);
    }
  }

  async close(): Promise<void> {
    const producer = await this.producer?.catch(() => undefined);
    await producer?.disconnect();
  }

  private connectedProducer(): Promise<Producer> {
    this.producer ??= (async () => {
      const producer = createKafka(this.config.kafka!, this.clientIdSuffix).producer({ createPartitioner: Partitioners.DefaultPartitioner });
      await producer.connect();
      return producer;
    })().catch((error: unknown) => {
      this.producer = undefined;
      throw error;
    });
    return this.producer;
  }
}
