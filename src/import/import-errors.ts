/** The line itself is wrong (unparseable, refused by the store for this line): failed, not retried. */
export class LineError extends Error {}

/** The store cannot answer now (429, 5xx, network): retried with backoff; 429's Retry-After pauses every worker. */
export class StoreRetryableError extends Error {
  /** rate-limited: the store said 429; unavailable: 5xx, a timeout or the network. */
  readonly reason: 'rate-limited' | 'unavailable';
  /** The store's Retry-After, in milliseconds, when it sent one. */
  readonly retryAfterMs?: number;

  constructor(message: string, o: { reason: 'rate-limited' | 'unavailable'; retryAfterMs?: number; cause?: unknown }) {
    super(message, { cause: o.cause });
    this.reason = o.reason;
    this.retryAfterMs = o.retryAfterMs;
  }
}

/** Nothing more can succeed (the store refuses the credentials): the run stops, what is done stays done. */
export class ImportFatalError extends Error {}
