/** The line itself is wrong (unparseable, refused by the store for this line): failed, not retried. */
export class LineError extends Error {}

/** The store cannot answer now (429, 5xx, network): retried with backoff; 429's Retry-After pauses every worker. */
export class StoreRetryableError extends Error {
  constructor(
    message: string,
    /** The store's Retry-After, in milliseconds, when it sent one. */
    readonly retryAfterMs?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Nothing more can succeed (the store refuses the credentials): the run stops, what is done stays done. */
export class ImportFatalError extends Error {}
