import { Inject, Injectable, Logger, BeforeApplicationShutdown, OnApplicationBootstrap, Optional } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '../../config/app-config.js';
import { DATABASE_SERVER } from '../../database/database.module.js';
import type { DatabaseServer } from '../../database/database-server.js';
import { EMBEDDED_PARTITION, eventLogBounds, eventLogEndOffsets, readEventLogBatch, readEventLogHead } from '../../event-log/event-log.js';
import { NOTIFY_CHANNEL } from '../../event-log/event-log.sql.js';
import type { ConsumerHealth, ConsumerStatus } from '../../health/consumer-status.js';
import { describePosition, positionProblem } from '../positions/log-positions.js';
import { LIVE_TARGET, PROJECTION_TARGET, type ProjectionTarget } from '../projection-target.js';
import { BatchAbandoned, Projector } from '../projector.js';
import { finishOrEndBatches } from '../stop-wait.js';
import { deadLetterTooLarge } from '../dead-letter-too-large.js';
import { PROJECTION_OBSERVER, type ProjectionObserver } from '../projection-observer.js';
import { CatchUpLog } from '../catch-up-log.js';

const IDLE_POLL_MS = 1_000;
/** The consumer's LISTEN connection, by which a CLI command finds a live consumer of the embedded log. */
export const EVENT_LOG_LISTENER = 'event-log-listener';
/**
 * Bytes of keys and values one batch may load (beyond its first message, which may take up to
 * EVENT_MAX_BYTES): at the default PROJECTION_BATCH_SIZE and events of a few hundred bytes, the
 * count ends a batch first; rows of a megabyte come a few at a time instead of thousands.
 */
const BATCH_BYTES = 8 * 1024 * 1024;

/**
 * The live projection when no Kafka is configured: reads the embedded event log table from the
 * stored offset, woken by NOTIFY when events are appended (and by a slow poll, should a
 * notification be missed while reconnecting).
 */
@Injectable()
export class EventLogConsumer implements OnApplicationBootstrap, BeforeApplicationShutdown, ConsumerStatus {
  private readonly logger = new Logger('event-log-consumer');
  private readonly catchUp = new CatchUpLog((line) => this.logger.log(line));
  private status: 'starting' | 'running' | 'retrying' | 'blocked' | 'stopped' = 'stopped';
  private reason?: string;
  private reported?: string;
  private stopping = false;
  private loop?: Promise<void>;
  /** Aborted by a stop that has waited long enough: the batch's transaction is ended. */
  private readonly abortBatch = new AbortController();
  private listener?: pg.Client;
  private wake?: () => void;
  /** A NOTIFY came since the loop last looked at the log (set by the listener, cleared before each read). */
  private notified = false;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(DATABASE_SERVER) private readonly server: DatabaseServer,
    @InjectDataSource() private readonly db: DataSource,
    private readonly projector: Projector,
    @Optional() @Inject(PROJECTION_TARGET) private readonly target: ProjectionTarget = LIVE_TARGET,
    @Optional() @Inject(PROJECTION_OBSERVER) private readonly observer?: ProjectionObserver,
  ) {
    this.topic = config.eventLogTopic;
  }

  readonly topic: string;

  async endOffsets(): Promise<Map<number, bigint>> {
    const offsets = await eventLogEndOffsets(this.db, this.topic);
    return new Map([...offsets].map(([p, o]) => [p, BigInt(o)]));
  }

  health(): ConsumerHealth {
    if (this.stopping) return { state: 'stopped' };
    if (this.status === 'starting') return { state: 'connecting', reason: 'starting' };
    if (this.status === 'blocked' || this.status === 'retrying') return { state: this.status, reason: this.reason };
    return (this.status === 'running' ? this.projector.health() : undefined) ?? { state: this.status };
  }

  /** One log line per state change, not one per retry. */
  private setStatus(status: EventLogConsumer['status'], reason?: string): void {
    this.status = status;
    this.reason = reason;
    const summary = `${status}:${reason ?? ''}`;
    if (summary === this.reported) return;
    this.reported = summary;
    if (status === 'running') this.logger.log({ state: status, msg: 'consumer running' });
    else this.logger.warn({ state: status, reason, msg: `consumer ${status}` });
  }

  onApplicationBootstrap(): void {
    this.status = 'starting';
    this.loop = this.run();
  }

  /** Before Nest's onApplicationShutdown hooks, which stop the database under a batch in flight. */
  async beforeApplicationShutdown(): Promise<void> {
    await this.stop();
  }

  /**
   * Stops consuming once the batch in flight has committed; one still unfinished after 15 s (waiting
   * on a lock) has its transaction ended instead, and is projected again on the next start.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    await finishOrEndBatches(() => this.loop, this.abortBatch, this.logger);
    await this.listener?.end().catch(() => undefined);
    this.status = 'stopped';
  }

  private async run(): Promise<void> {
    const topic = this.config.eventLogTopic;
    this.logger.log({ topic, schema: this.target.schema, msg: 'consuming the embedded event log' });
    while (!this.stopping) {
      try {
        await this.ensureListener();
        // What is appended from here on is either read below or wakes the next idle().
        this.notified = false;
        const { schema, bounds } = this.target;
        const [row] = (await this.db.query(`SELECT next_offset::text AS next_offset FROM ${schema}.projection_offsets WHERE topic = $1 AND partition = $2`, [
          topic,
          EMBEDDED_PARTITION,
        ])) as { next_offset: string }[];
        const from = BigInt(row?.next_offset ?? '0');
        const bound = bounds?.get(EMBEDDED_PARTITION);
        const limit = bound === undefined ? this.config.projectionBatchSize : Math.min(this.config.projectionBatchSize, Number(bound - from));
        const read =
          limit > 0
            ? await readEventLogBatch(this.db, topic, EMBEDDED_PARTITION, String(from), limit, {
                messageBytes: this.config.eventMaxBytes,
                batchBytes: BATCH_BYTES,
              })
            : undefined;
        const messages = read?.messages ?? [];
        const first = messages[0]?.offset ?? read?.tooLarge?.offset;
        if (first === undefined || BigInt(first) !== from) {
          // Nothing at the stored offset: caught up, unless the log was emptied or cut under the read models.
          const { low, high } = await eventLogBounds(this.db, topic);
          const position = { partition: EMBEDDED_PARTITION, logStart: low, logEnd: high, stored: row ? from : undefined };
          if (positionProblem(position)) {
            this.setStatus('blocked', `${describePosition(position)}; run \`npm run cli -- offsets reset\` or \`rebuild\` (docs/operations.md)`);
            await this.idle();
            continue;
          }
        }
        this.setStatus('running');
        if (read?.tooLarge) {
          await this.deadLetterTooLarge(read.tooLarge.offset);
          continue;
        }
        if (messages.length > 0) {
          await this.projector.apply(
            { topic, partition: EMBEDDED_PARTITION, messages },
            { shouldContinue: () => !this.stopping },
            { schema, stage: this.target.stage, signal: this.abortBatch.signal },
          );
          const next = BigInt(messages.at(-1)!.offset) + 1n;
          // the log's end only matters while there is more to read: a batch that reached it is caught up
          this.catchUp.batchApplied(EMBEDDED_PARTITION, messages.length, next, read?.more ? (await eventLogBounds(this.db, topic)).high : next);
          if (read?.more) continue;
        }
        await this.idle();
      } catch (error) {
        if (error instanceof BatchAbandoned || this.stopping) break;
        this.setStatus('retrying', `reading the event log failed: ${(error as Error).message}`);
        await this.listener?.end().catch(() => undefined);
        this.listener = undefined;
        await this.idle();
      }
    }
  }

  /** A row over EVENT_MAX_BYTES, whoever wrote it: dead-lettered from its first bytes, never loaded whole. */
  private async deadLetterTooLarge(offset: string): Promise<void> {
    const started = performance.now();
    const max = this.config.eventMaxBytes;
    const head = await readEventLogHead(this.db, this.topic, EMBEDDED_PARTITION, offset, max);
    if (!head) return; // gone meanwhile: the next read looks at the log again
    const message = { topic: this.topic, partition: EMBEDDED_PARTITION, offset, ...head, sha1: null };
    const outcome = await deadLetterTooLarge(this.db, message, max, { schema: this.target.schema });
    this.observer?.batchApplied(
      { topic: this.topic, partition: EMBEDDED_PARTITION, messages: [{ offset, key: null, value: null }] },
      outcome,
      performance.now() - started,
    );
  }

  private idle(): Promise<void> {
    // Appended while a batch was read or applied: the NOTIFY found no idle() to wake; read again at once.
    if (this.notified) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, IDLE_POLL_MS);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }

  private async ensureListener(): Promise<void> {
    if (this.listener) return;
    const client = new pg.Client({ connectionString: this.server.url, application_name: EVENT_LOG_LISTENER });
    client.on('notification', () => {
      this.notified = true;
      this.wake?.();
    });
    client.on('error', () => {
      this.listener = undefined;
      void client.end().catch(() => undefined);
    });
    await client.connect();
    await client.query(`LISTEN ${NOTIFY_CHANNEL}`);
    this.listener = client;
  }
}
