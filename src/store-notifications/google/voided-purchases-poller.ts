import { Inject, Injectable, Logger, BeforeApplicationShutdown, OnApplicationBootstrap } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { createHash } from 'node:crypto';
import { DataSource } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '../../config/app-config.js';
import { PeriodicTask } from '../../common/periodic-task.js';
import { googleVoidedImportEvents, type StoredOrder } from '../../import/google/google-import.js';
import { GooglePlayApi } from './google-play.js';
import { GOOGLE_VOIDED_KIND, listVoidedPurchases, storedOrder, VOIDED_RETENTION_MS, voidedItemKey } from '../../import/google/google-voided.js';
import { GOOGLE_VOIDED_POLL_LOCK } from '../../database/advisory-locks.js';
import { ImportJournal } from '../../import/import-journal.js';
import { NotificationPublisher } from '../notification-publisher.js';
import { sourcedLine } from '../../import/import-runner.js';
import { SOURCES } from '../../events/provenance.js';

/** Each poll starts this far before the last one did: Google files a void when it sees it, not at voidedTimeMillis. */
const OVERLAP_MS = 10 * 60_000;

/**
 * Polls voidedpurchases.list every GOOGLE_VOIDED_POLL_INTERVAL for each GOOGLE_APPS app, since Google
 * does not notify every refund, and revokes what it lists as `import google-voided` does (same ids,
 * same journal: a void is done once whichever of them saw it first). The last poll's start is kept
 * in public.import_checkpoint, so a restart continues from there (within Google's 30 days).
 */
@Injectable()
export class VoidedPurchasesPoller implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('google-voided-poller');
  private readonly polls = new PeriodicTask(this.logger, 'polling voided purchases failed; the next poll retries', () => this.pollOnce());
  private readonly abort = new AbortController();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectDataSource() private readonly db: DataSource,
    private readonly publisher: NotificationPublisher,
  ) {}

  onApplicationBootstrap(): void {
    const every = this.config.google?.voidedPollIntervalMs;
    if (every) this.polls.start(every);
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.abort.abort();
    await this.polls.stop();
  }

  /** One poll of every app, if no other instance holds the lock; returns the voids published. */
  async pollOnce(): Promise<number> {
    const google = this.config.google;
    if (!google) return 0;
    const runner = this.db.createQueryRunner();
    await runner.connect();
    let published = 0;
    try {
      const [{ locked }] = (await runner.query('SELECT pg_try_advisory_lock($1) AS locked', [GOOGLE_VOIDED_POLL_LOCK])) as { locked: boolean }[];
      if (!locked) return 0;
      try {
        const api = new GooglePlayApi(google);
        for (const [appId, { packageName }] of google.apps) {
          if (this.abort.signal.aborted) break;
          published += await this.pollApp(api, appId, packageName);
        }
      } finally {
        await runner.query('SELECT pg_advisory_unlock($1)', [GOOGLE_VOIDED_POLL_LOCK]);
      }
    } finally {
      await runner.release();
    }
    return published;
  }

  private async pollApp(api: GooglePlayApi, appId: string, packageName: string): Promise<number> {
    const journal = new ImportJournal(this.db, appId, GOOGLE_VOIDED_KIND, createHash('sha256').update(packageName).digest('hex'));
    const started = Date.now();
    const last = Number(await journal.checkpoint());
    const oldest = started - VOIDED_RETENTION_MS + 60_000;
    const since = Number.isFinite(last) && last > 0 ? Math.max(oldest, last - OVERLAP_MS) : oldest;
    let published = 0;
    let n = 0;
    // orders this poll revoked: a second void of one order adds to the first (googleVoidedImportEvents)
    const revoked = new Map<string, StoredOrder>();
    for await (const v of listVoidedPurchases(api, packageName, since, { attempts: 3 }, this.abort.signal)) {
      n++;
      const key = voidedItemKey(v);
      if ((await journal.done([key])).size > 0) continue;
      const result = sourcedLine(googleVoidedImportEvents(appId, v, await storedOrder(this.db, appId, v.orderId), revoked), SOURCES.googleVoidedPoll);
      if ('skip' in result) {
        this.logger.warn({ msg: 'voided purchase not applied', appId, reason: result.skip });
        await journal.record([{ key, line: n, outcome: 'skipped', detail: result.skip }]);
        continue;
      }
      await this.publisher.publish(result.events);
      await journal.record([{ key, line: n, outcome: 'imported' }]);
      published++;
    }
    if (!this.abort.signal.aborted) await journal.saveCheckpoint(String(started));
    if (published > 0) this.logger.log({ msg: 'voided purchases revoked', appId, published });
    return published;
  }
}
