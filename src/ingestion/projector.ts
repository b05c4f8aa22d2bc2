import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import type { ConsumerHealth, StuckPartition } from '../health/consumer-status.js';
import { applyBatch, type ApplyOptions } from '../projection/apply-batch.js';
import type { Batch, BatchOutcome } from '../events/log-batch.js';
import { backoffMs, isContentError, isIncurable, isTransient, sqlState } from './failure-policy.js';
import { PROJECTION_OBSERVER, type ProjectionObserver } from './projection-observer.js';

export type RetryControl = {
  /** False once the consumer is stopping or the partition was taken away: give up the batch. */
  shouldContinue(): boolean;
  /** Called while waiting between attempts, so a Kafka group keeps this member. */
  heartbeat?(): Promise<void>;
};

export class BatchAbandoned extends Error {}

/**
 * Applies batches for any log source (Kafka or the embedded log). Failures pause and retry the
 * same batch with backoff, never advancing offsets, until it succeeds or the source stops. A failure
 * retrying cannot cure (isIncurable) is retried all the same, every 30 s at most, since the fix is
 * the operator's (settings, privileges, a migration) and the batch should go on by itself once it
 * is made; but its partition is reported `stuck` with the error, in one log line, instead of a
 * warning per attempt.
 */
@Injectable()
export class Projector {
  private readonly logger = new Logger('projector');
  private retrying = false;
  /** Partitions whose batch keeps failing in a way retrying cannot cure, by partition. */
  private readonly stuck = new Map<number, StuckPartition>();

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    @Inject(PROJECTION_OBSERVER) private readonly observer: ProjectionObserver,
    @Inject(APP_CONFIG) private readonly config: Pick<AppConfig, 'eventTimeMaxSkewMs'>,
  ) {}

  /** The projection's part of the consumer's health: undefined while batches apply. */
  health(): ConsumerHealth | undefined {
    if (this.stuck.size > 0) {
      const stuck = [...this.stuck.values()].sort((a, b) => a.partition - b.partition);
      return { state: 'stuck', reason: stuck.map((p) => `partition ${p.partition} at offset ${p.offset}: ${p.code} ${p.error}`).join('; '), stuck };
    }
    if (this.retrying) return { state: 'retrying', reason: 'a batch keeps failing against PostgreSQL; retrying without moving offsets' };
    return undefined;
  }

  async apply(batch: Batch, control: RetryControl, options: ApplyOptions = {}): Promise<BatchOutcome> {
    let current = options;
    for (let attempt = 0; ; attempt++) {
      const started = performance.now();
      try {
        const outcome = await applyBatch(this.db, batch, { maxFutureSkewMs: this.config.eventTimeMaxSkewMs, ...current });
        this.retrying = false;
        this.unstuck(batch);
        this.observer.batchApplied(batch, outcome, performance.now() - started);
        return outcome;
      } catch (error) {
        if (!control.shouldContinue()) {
          // another instance (or the next start) takes the partition over, and reports it
          this.stuck.delete(batch.partition);
          throw new BatchAbandoned('consumer stopping');
        }
        const [alone] = batch.messages.length === 1 ? batch.messages : [];
        const refusedAlone = alone !== undefined && current.refused?.has(alone.offset) === true;
        if (isContentError(error) && !refusedAlone) {
          if (alone === undefined) return this.isolate(batch, control, current);
          // once stuck, every retry comes this way again: said once
          if (!this.stuck.has(batch.partition)) {
            this.logger.error({
              topic: batch.topic,
              partition: batch.partition,
              offset: alone.offset,
              err: (error as Error).message,
              msg: 'PostgreSQL refused this event; dead-lettering it',
            });
          }
          current = { ...current, refused: new Map([...(current.refused ?? []), [alone.offset, (error as Error).message]]) };
          continue;
        }
        // Refused even without its event: not the event's content. Projected as it is next time,
        // so the event is not dead-lettered for what the operator fixes meanwhile.
        if (refusedAlone) current = options;
        this.retrying = true;
        const wait = backoffMs(attempt);
        const detail = {
          topic: batch.topic,
          partition: batch.partition,
          firstOffset: batch.messages[0]?.offset,
          attempt,
          retryInMs: wait,
          err: (error as Error).message,
        };
        if (isIncurable(error, attempt, refusedAlone)) this.reportStuck(batch, error as Error);
        else if (isTransient(error)) this.logger.warn({ ...detail, msg: 'batch failed, will retry' });
        else this.logger.error({ ...detail, msg: 'batch failed with an unexpected error, will retry' });
        this.observer.batchFailed(batch, error);
        await this.pause(wait, control);
      }
    }
  }

  /** One error line when a partition becomes stuck; later attempts only count in the metrics. */
  private reportStuck(batch: Batch, error: Error): void {
    if (this.stuck.has(batch.partition)) return;
    const stuck = {
      partition: batch.partition,
      offset: batch.messages[0]?.offset ?? '',
      code: sqlState(error) ?? 'unknown',
      error: error.message,
      since: new Date().toISOString(),
    };
    this.stuck.set(batch.partition, stuck);
    this.logger.error({
      topic: batch.topic,
      ...stuck,
      msg: 'partition stuck: PostgreSQL refuses its batch in a way retrying cannot cure; retrying with backoff until an operator fixes the cause (docs/operations.md)',
    });
  }

  private unstuck(batch: Batch): void {
    const stuck = this.stuck.get(batch.partition);
    if (stuck === undefined) return;
    this.stuck.delete(batch.partition);
    this.logger.warn({
      topic: batch.topic,
      partition: batch.partition,
      code: stuck.code,
      since: stuck.since,
      msg: 'partition no longer stuck: its batch applied',
    });
  }

  /**
   * PostgreSQL refused something in the batch for its content: apply the halves in order until the
   * one event it refuses is alone (apply dead-letters it), so no single message stops a partition.
   */
  private async isolate(batch: Batch, control: RetryControl, options: ApplyOptions): Promise<BatchOutcome> {
    const middle = Math.floor(batch.messages.length / 2);
    const first = await this.apply({ ...batch, messages: batch.messages.slice(0, middle) }, control, options);
    if (first.kind === 'gap') return first;
    const second = await this.apply({ ...batch, messages: batch.messages.slice(middle) }, control, options);
    if (second.kind === 'gap') return second;
    return {
      kind: 'applied',
      nextOffset: second.nextOffset,
      applied: [...first.applied, ...second.applied],
      alreadyProjected: first.alreadyProjected + second.alreadyProjected,
      deadLetters: [...first.deadLetters, ...second.deadLetters],
    };
  }

  private async pause(ms: number, control: RetryControl): Promise<void> {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      if (!control.shouldContinue()) throw new BatchAbandoned('consumer stopping');
      await new Promise((r) => setTimeout(r, Math.min(1000, until - Date.now())));
      await control.heartbeat?.();
    }
  }
}
