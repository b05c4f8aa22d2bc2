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
  const code = sqlState(error);
  return code !== undefined && CONTENT_SQLSTATE.test(code);
}

/**
 * Insufficient resources (53: out of shared memory, disk full, too many connections) pass when
 * another session lets go; still there after this many attempts, they are the server's settings or
 * disk, and an operator has to act.
 */
const RESOURCE_ATTEMPTS = 3;

/**
 * Whether retrying the same batch can cure a failure by itself. Not: PostgreSQL refusing the
 * statements themselves (42: a missing table or column, a privilege), internal errors and corruption
 * (XX), resources still short after a few attempts, a batch refused for content that splitting
 * cannot pin on one event (`contentIsolated`). Connection loss, restarts, deadlocks and anything
 * without a SQLSTATE (Kafka while dead-lettering) are waited out.
 */
export function isIncurable(error: unknown, attempt: number, contentIsolated = false): boolean {
  const code = sqlState(error);
  if (code === undefined) return false;
  if (CONTENT_SQLSTATE.test(code)) return contentIsolated;
  if (code.startsWith('53')) return attempt + 1 >= RESOURCE_ATTEMPTS;
  return !isTransient(error);
}

export function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown })?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** 0.5 s, 1 s, 2 s ... capped at 30 s, with jitter so replicas do not retry in step. */
export function backoffMs(attempt: number): number {
  const base = Math.min(30_000, 500 * 2 ** Math.min(attempt, 6));
  return Math.round(base * (0.75 + Math.random() * 0.5));
}
