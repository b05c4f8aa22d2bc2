import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Partitioners, type Producer } from 'kafkajs';
import { DataSource } from 'typeorm';
import { ErrorCode } from '../common/errors.js';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { appendToEventLog } from '../event-log/event-log.js';
import { decodeEvent } from '../events/decode-event.js';
import { createKafka } from '../ingestion/kafka/kafka-client.js';
import { StoreNotificationError } from './store-notification.errors.js';

/**
 * Appends the events a store notification stands for to the log the service consumes (Kafka topic
 * or embedded log), keyed by receipt like `publish`. Each event is checked against the contract
 * first: the projection would dead-letter what this let through.
 */
@Injectable()
export class NotificationPublisher implements OnApplicationShutdown {
  private producer?: Promise<Producer>;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectDataSource() private readonly db: DataSource,
  ) {}

  async publish(events: readonly (Record<string, unknown> & { data: { receiptId: string } })[]): Promise<void> {
    const messages = events.map((event) => {
      const value = Buffer.from(JSON.stringify(event));
      const decoded = decodeEvent(value, { receivedAt: Date.now(), maxFutureSkewMs: this.config.eventTimeMaxSkewMs });
      if (!decoded.ok) throw new StoreNotificationError(ErrorCode.NotificationUnmappable, `the notification maps to an event the contract refuses (${decoded.code}): ${decoded.reason}`);
      return { key: event.data.receiptId, value };
    });
    try {
      if (this.config.kafka) {
        const producer = await this.connectedProducer();
        await producer.send({ topic: this.config.kafka.topic, acks: -1, messages });
      } else {
        await appendToEventLog(this.db, this.config.eventLogTopic, messages);
      }
    } catch (error) {
      // The broker's or PostgreSQL's words go to the log (the problem filter logs 503s with their cause), not to the store.
      throw new StoreNotificationError(ErrorCode.EventLogUnavailable, `the event log (${this.config.kafka ? 'Kafka' : 'PostgreSQL'}) cannot take the notification now; the store will retry`, { cause: error });
    }
  }

  private connectedProducer(): Promise<Producer> {
    this.producer ??= (async () => {
      const producer = createKafka(this.config.kafka!, '-notifications').producer({ createPartitioner: Partitioners.DefaultPartitioner });
      await producer.connect();
      return producer;
    })().catch((error: unknown) => {
      this.producer = undefined;
      throw error;
    });
    return this.producer;
  }

  async onApplicationShutdown(): Promise<void> {
    const producer = await this.producer?.catch(() => undefined);
    await producer?.disconnect();
  }
}
