import { Inject, Injectable } from '@nestjs/common';
import type { Metrics } from '../metrics/metrics.js';
import { METRICS } from '../metrics/metrics.module.js';
import { NewestEventClock } from '../metrics/newest-event-clock.js';
import type { Batch, BatchOutcome } from '../events/log-batch.js';
import { LoggingObserver } from './logging-observer.js';
import type { ProjectionObserver } from './projection-observer.js';

/** The live projection's logs and metrics. */
@Injectable()
export class TelemetryObserver implements ProjectionObserver {
  private readonly log = new LoggingObserver();

  constructor(
    @Inject(METRICS) private readonly metrics: Metrics,
    private readonly clock: NewestEventClock,
  ) {}

  batchApplied(batch: Batch, outcome: BatchOutcome, durationMs: number): void {
    this.log.batchApplied(batch, outcome, durationMs);
    if (outcome.kind !== 'applied') return;
    this.metrics.batchSize.observe(batch.messages.length);
    this.metrics.batchDuration.observe(durationMs / 1000);
    const applied = new Map<string, number>();
    for (const event of outcome.applied) {
      applied.set(event.type, (applied.get(event.type) ?? 0) + 1);
      this.clock.observe(event.time);
    }
    for (const [type, n] of applied) this.metrics.eventsProjected.inc({ type, outcome: 'applied' }, n);
    for (const d of outcome.deadLetters) {
      this.metrics.deadLetters.inc({ code: d.code });
      this.metrics.eventsProjected.inc({ type: 'unknown', outcome: 'dead_letter' });
    }
  }

  batchFailed(): void {
    this.log.batchFailed();
    this.metrics.batchFailures.inc();
  }
}
