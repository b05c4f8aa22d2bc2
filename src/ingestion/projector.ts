import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { applyBatch, type ApplyOptions, type Batch, type BatchOutcome } from '../projection/apply-batch.js';
import { backoffMs, isTransient } from './failure-policy.js';
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
  ) {}

  get isRetrying(): boolean {
    return this.retrying;
  }

  async apply(batch: Batch, control: RetryControl, options: ApplyOptions = {}): Promise<BatchOutcome> {
    for (let attempt = 0; ; attempt++) {
      const started = performance.now();
      try {
        const outcome = await applyBatch(this.db, batch, options);
        this.retrying = false;
        this.observer.batchApplied(batch, outcome, performance.now() - started);
        return outcome;
      } catch (error) {
        if (!control.shouldContinue()) throw new BatchAbandoned('consumer stopping');
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

  private async pause(ms: number, control: RetryControl): Promise<void> {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      if (!control.shouldContinue()) throw new BatchAbandoned('consumer stopping');
      await new Promise((r) => setTimeout(r, Math.min(1000, until - Date.now())));
      await control.heartbeat?.();
    }
  }
}
