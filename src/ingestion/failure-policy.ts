// PostgreSQL SQLSTATE classes that pass: connection (08), serialisation/deadlock (40),
// resources (53), operator intervention such as a restart (57), system errors (58).
const TRANSIENT_SQLSTATE = /^(08|40|53|57|58)/;
const TRANSIENT_NODE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * Whether a failure while writing a batch is expected to pass by itself. Either way the batch is
 * retried with backoff and offsets do not move (nothing is skipped); the distinction only decides
 * how loudly it is logged.
 */
export function isTransient(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown };
  if (typeof e?.code === 'string' && (TRANSIENT_SQLSTATE.test(e.code) || TRANSIENT_NODE.has(e.code))) return true;
  return typeof e?.message === 'string' && /timeout|terminat|Connection|ECONNREFUSED/i.test(e.message);
}

/** 0.5 s, 1 s, 2 s ... capped at 30 s, with jitter so replicas do not retry in step. */
export function backoffMs(attempt: number): number {
  const base = Math.min(30_000, 500 * 2 ** Math.min(attempt, 6));
  return Math.round(base * (0.75 + Math.random() * 0.5));
}
