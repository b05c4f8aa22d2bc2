import { isDatabaseUnavailable } from '../database/database-errors.js';

/**
 * Whether a failure while writing a batch is expected to pass by itself. Either way the batch is
 * retried with backoff and offsets do not move (nothing is skipped); the distinction only decides
 * how loudly it is logged.
 */
export const isTransient = isDatabaseUnavailable;

// Data exception (22), integrity constraint (23), program limit such as an over-long index entry (54):
// PostgreSQL refused what it was given, and will refuse it again however often it is retried.
const CONTENT_SQLSTATE = /^(22|23|54)/;

/** A failure caused by the batch's content: splitting the batch finds the event, which is dead-lettered. */
export function isContentError(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  return typeof code === 'string' && CONTENT_SQLSTATE.test(code);
}

/** 0.5 s, 1 s, 2 s ... capped at 30 s, with jitter so replicas do not retry in step. */
export function backoffMs(attempt: number): number {
  const base = Math.min(30_000, 500 * 2 ** Math.min(attempt, 6));
  return Math.round(base * (0.75 + Math.random() * 0.5));
}
