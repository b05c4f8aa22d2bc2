import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { storeEventSink, type EventSink } from '../cli/event-sink.js';
import { PeriodicTask } from '../common/periodic-task.js';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { withReconcileLock } from './reconcile-lock.js';
import { LogWriter } from '../event-log/log-writer.js';
import { METRICS } from '../metrics/metrics.module.js';
import type { Metrics } from '../metrics/metrics.js';
import { reconcilePass, type ReconcileSummary } from './reconcile-pass.js';
import { reconcilableApps, reconcileStores } from './reconcile-stores.js';

/** Largest chunk of events one append carries (the embedded log holds a statement's parameters whole). */
const CHUNK_BYTES = 1024 * 1024;

/**
 * Every RECONCILE_INTERVAL, a suspect pass (`reconcile --app <id>`) for each app with store API
 * credentials, by one instance at a time (RECONCILE_LOCK, as the voided-purchases poller), into the
 * log the service writes store notifications to. A pass a restart interrupted is resumed by the next.
 */
@Injectable()
export class ReconcileScheduler implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('reconcile');
  private readonly passes = new PeriodicTask(this.logger, 'reconciliation failed; the next pass retries', () => this.passOnce());
  private readonly abort = new AbortController();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectDataSource() private readonly db: DataSource,
    @Inject(METRICS) private readonly metrics: Metrics,
  ) {}

  onApplicationBootstrap(): void {
    const every = this.config.reconcile.intervalMs;
    if (every) this.passes.start(every);
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.abort.abort();
    await this.passes.stop();
  }

  /** One pass over every app, if no other instance holds the lock; the summaries of the apps passed. */
  async passOnce(): Promise<ReconcileSummary[]> {
    const done: ReconcileSummary[] = [];
    await withReconcileLock(this.db, async () => {
      const log = new LogWriter(this.config, this.db, '-reconcile');
      const sink: EventSink = storeEventSink(
        this.db,
        { send: (messages) => log.append(messages.map((m) => ({ key: m.key ?? '', value: m.value }))), close: () => log.close(), chunkBytes: CHUNK_BYTES },
        { seal: this.config.cryptoShredding },
      );
      try {
        for (const appId of reconcilableApps(this.config)) {
          if (this.abort.signal.aborted) break;
          done.push(await this.passApp(appId, sink));
        }
      } finally {
        await sink.close();
      }
    });
    return done;
  }

  private async passApp(appId: string, sink: EventSink): Promise<ReconcileSummary> {
    const stores = reconcileStores(this.config, appId, (store, outcome) => this.metrics.storeApiCalls.inc({ store, outcome }));
    const summary = await reconcilePass({
      appId,
      mode: 'suspect',
      db: this.db,
      stores,
      policy: this.config.reconcile,
      concurrency: this.config.importConcurrency,
      maxFutureSkewMs: this.config.eventTimeMaxSkewMs,
      sink,
      out: () => undefined,
      // A line per healed subscription (the receipt and the kinds, never a username) and per failed one.
      log: (text) => this.logger.log({ msg: text.trim(), appId }),
      onDrift: (kind) => this.metrics.reconcileDrift.inc({ kind }),
      signal: this.abort.signal,
      retry: { attempts: 4 },
    });
    for (const [reason, n] of Object.entries(summary.asked)) if (n > 0) this.metrics.reconcileChecked.inc({ reason }, n);
    this.logger.log({
      msg: 'reconciliation pass',
      appId,
      asked: Object.values(summary.asked).reduce((a, b) => a + b, 0),
      healed: summary.healed,
      events: summary.events,
      failed: summary.failed.length,
      ...(summary.fatal ? { stopped: summary.fatal } : {}),
    });
    return summary;
  }
}
