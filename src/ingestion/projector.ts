import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { applyBatch, type ApplyOptions, type Batch, type BatchOutcome } from '../projection/apply-batch.js';
import { backoffMs, isContentError, isTransient } from './failure-policy.js';
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
 * same batch with backoff, never advancing offsets, until it succeeds or the source stops.
 */
@Injectable()
export class Projector {
  private readonly logger = new Logger('projector');
  private retrying = false;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    @Inject(PROJECTION_OBSERVER) private readonly observer: ProjectionObserver,
    @Inject(APP_CONFIG) private readonly config: Pick<AppConfig, 'eventTimeMaxSkewMs'>,
  ) {}

  get isRetrying(): boolean {
    return this.retrying;
  }

  async apply(batch: Batch, control: RetryControl, options: ApplyOptions = {}): Promise<BatchOutcome> {
    for (let attempt = 0; ; attempt++) {
      const started = performance.now();
      try {
        const outcome = await applyBatch(this.db, batch, { maxFutureSkewMs: this.config.eventTimeMaxSkewMs, ...options });
        this.retrying = false;
        this.observer.batchApplied(batch, outcome, performance.now() - started);
        return outcome;
      } catch (error) {
        if (!control.shouldContinue()) throw new BatchAbandoned('consumer stopping');
        if (isContentError(error)) return this.isolate(batch, control, options, error as Error);
        this.retrying = true;
        const wait = backoffMs(attempt);
        const detail = { topic: batch.topic, partition: batch.partition, firstOffset: batch.messages[0]?.offset, attempt, retryInMs: wait, err: (error as Error).message };
        if (isTransient(error)) this.logger.warn({ ...detail, msg: 'batch failed, will retry' });
        else this.logger.error({ ...detail, msg: 'batch failed with an unexpected error, will retry' });
        this.observer.batchFailed(batch, error);
        await this.pause(wait, control);
      }
    }
  }

  /**
   * PostgreSQL refused something in the batch for its content: apply the halves in order until the
   * one event it refuses is alone, and dead-letter that event, so no single message stops a partition.
   */
  private async isolate(batch: Batch, control: RetryControl, options: ApplyOptions, error: Error): Promise<BatchOutcome> {
    if (batch.messages.length === 1) {
      const [msg] = batch.messages;
      this.logger.error({ topic: batch.topic, partition: batch.partition, offset: msg.offset, err: error.message, msg: 'PostgreSQL refused this event; dead-lettering it' });
      return this.apply(batch, control, { ...options, refused: new Map([...(options.refused ?? []), [msg.offset, error.message]]) });
    }
    const middle = Math.floor(batch.messages.length / 2);
    const first = await this.apply({ ...batch, messages: batch.messages.slice(0, middle) }, control, options);
    if (first.kind === 'gap') return first;
    const second = await this.apply({ ...batch, messages: batch.messages.slice(middle) }, control, options);
    if (second.kind === 'gap') return second;
    return {
      kind: 'applied',
      nextOffset: second.nextOffset,
      applied: [...first.applied, ...second.applied],
      duplicates: first.duplicates + second.duplicates,
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
