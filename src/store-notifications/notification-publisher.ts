import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { ErrorCode } from '../common/errors.js';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { resolveAccountTokens } from '../customers/account-tokens/account-tokens.js';
import { yieldToAppLinks } from '../customers/receipt-links/app-links.js';
import { sealEvents } from '../customers/crypto-shredding/sealed-username.js';
import { LogWriter } from '../event-log/log-writer.js';
import { decodeEvent } from '../events/decode-event.js';
import { StoreNotificationError } from './store-notification.errors.js';

/**
 * Appends the events a store notification stands for to the log the service consumes (Kafka topic
 * or embedded log), keyed by receipt like `publish`. Each event is checked against the contract
 * first: the projection would dead-letter what this let through.
 */
@Injectable()
export class NotificationPublisher implements OnApplicationShutdown {
  private readonly log: LogWriter;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectDataSource() private readonly db: DataSource,
  ) {
    this.log = new LogWriter(config, db, '-notifications');
  }

  async publish(events: readonly (Record<string, unknown> & { data: { receiptId: string } })[]): Promise<void> {
    for (const event of events) {
      const decoded = decodeEvent(Buffer.from(JSON.stringify(event)), { receivedAt: Date.now(), maxFutureSkewMs: this.config.eventTimeMaxSkewMs });
      if (!decoded.ok)
        throw new StoreNotificationError(
          ErrorCode.NotificationUnmappable,
          `the notification maps to an event the contract refuses (${decoded.code}): ${decoded.reason}`,
        );
    }
    try {
      const resolved = structuredClone(events);
      await resolveAccountTokens(this.db, resolved);
      const published = await yieldToAppLinks(this.db, resolved);
      if (this.config.cryptoShredding) await sealEvents(this.db, published);
      await this.log.append(published.map((event) => ({ key: event.data.receiptId, value: Buffer.from(JSON.stringify(event)) })));
    } catch (error) {
      // The broker's or PostgreSQL's words go to the log (the problem filter logs 503s with their cause), not to the store.
      throw new StoreNotificationError(
        ErrorCode.EventLogUnavailable,
        `the event log (${this.log.store}) cannot take the notification now; the store will retry`,
        { cause: error },
      );
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await this.log.close();
  }
}
