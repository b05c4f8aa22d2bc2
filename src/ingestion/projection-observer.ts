import type { Batch, BatchOutcome } from '../events/log-batch.js';

export const PROJECTION_OBSERVER = Symbol('PROJECTION_OBSERVER');

/** What the projection reports as it runs (logs, metrics). */
export interface ProjectionObserver {
  batchApplied(batch: Batch, outcome: BatchOutcome, durationMs: number): void;
  batchFailed(batch: Batch, error: unknown): void;
}
