import { Logger } from '@nestjs/common';
import type { Batch, BatchOutcome } from '../events/log-batch.js';
import type { ProjectionObserver } from './projection-observer.js';

export class LoggingObserver implements ProjectionObserver {
  private readonly logger = new Logger('projector');

  batchApplied(batch: Batch, outcome: BatchOutcome, durationMs: number): void {
    if (outcome.kind !== 'applied') return;
    for (const d of outcome.deadLetters) {
      this.logger.warn({ topic: d.topic, partition: d.partition, offset: d.offset, code: d.code, reason: d.reason, msg: 'dead-lettered' });
    }
    this.logger.debug({
      topic: batch.topic,
      partition: batch.partition,
      nextOffset: outcome.nextOffset,
      events: outcome.applied.length,
      durationMs: Math.round(durationMs),
      msg: 'batch applied',
    });
  }

  batchFailed(): void {
    // the projector logs each failed attempt with its retry delay
  }
}
