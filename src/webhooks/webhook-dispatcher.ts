import { Inject, Injectable, Logger, BeforeApplicationShutdown, OnApplicationBootstrap } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { Clock } from '../common/clock.js';
import { feedDeletionsSql } from '../change-feed/feed-deletions.sql.js';
import { KEEP_FEED_DELETIONS_MS } from '../change-feed/feed-retention.js';
import { METRICS } from '../metrics/metrics.module.js';
import type { Metrics } from '../metrics/metrics.js';
import { queueChanges } from './queue-changes.js';
import { WebhookSender } from './send-deliveries.js';
import { webhooksSql } from './webhooks.sql.js';

const PRUNE_EVERY_MS = 10 * 60_000;
export const KEEP_DELIVERED_MS = 7 * 86_400_000;
export const KEEP_FAILED_MS = 30 * 86_400_000;

/**
 * Drops delivered deliveries after a week and failed ones after a month, and change-feed deletion
 * entries after a month (docs/change-feed.md).
 */
export async function pruneDeliveries(db: DataSource): Promise<void> {
  await db.query(webhooksSql.prune, [KEEP_DELIVERED_MS, KEEP_FAILED_MS]);
  await db.query(feedDeletionsSql.prune, [KEEP_FEED_DELETIONS_MS]);
}

/**
 * Runs in every service instance with WEBHOOK_DELIVERY_ENABLED: queues what the change feed shows
 * for each endpoint, then sends what is due. Instances share the work through PostgreSQL.
 */
@Injectable()
export class WebhookDispatcher implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('webhooks');
  private readonly sender: WebhookSender;
  private running = false;
  private loop?: Promise<void>;
  private wake?: () => void;
  private failing = false;
  private prunedAt = 0;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectDataSource() private readonly db: DataSource,
    @Inject(METRICS) metrics: Metrics,
    private readonly clock: Clock,
  ) {
    this.sender = new WebhookSender(db, config.webhooks, metrics, { warn: (o) => this.logger.warn(o), info: (o) => this.logger.log(o) });
  }

  onApplicationBootstrap(): void {
    if (!this.config.webhooks.deliveryEnabled) return;
    this.running = true;
    this.loop = this.run();
  }

  /** Before Nest's onApplicationShutdown hooks, which close the database pool under a delivery in flight. */
  async beforeApplicationShutdown(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.loop;
    await this.sender.close();
  }

  private async run(): Promise<void> {
    while (this.running) {
      let busy = false;
      try {
        const queued = await queueChanges(this.db, () => this.clock.now(), 200, this.config.commission);
        const claimed = await this.sender.sendDue();
        if (Date.now() - this.prunedAt > PRUNE_EVERY_MS) {
          await pruneDeliveries(this.db);
          this.prunedAt = Date.now();
        }
        busy = queued > 0 || claimed > 0;
        if (this.failing) this.logger.log('webhook delivery resumed');
        this.failing = false;
      } catch (error) {
        if (!this.failing) this.logger.warn({ msg: 'webhook delivery paused (PostgreSQL unreachable or refusing); retrying', error: (error as Error).message });
        this.failing = true;
      }
      if (!busy)
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, this.config.webhooks.pollMs);
          this.wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
    }
  }
}
