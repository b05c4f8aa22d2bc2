import { setTimeout as sleep } from 'node:timers/promises';
import { StoreRetryableError } from './import-errors.js';

export type RetryPolicy = {
  /** Tries of one request before its line fails. */
  attempts: number;
  /** First backoff after a 5xx or a network error; doubles each time, with jitter. */
  baseMs: number;
  /** Longest single wait, Retry-After included. */
  maxDelayMs: number;
};

export const DEFAULT_RETRY: RetryPolicy = { attempts: 8, baseMs: 500, maxDelayMs: 60_000 };

/** The instant before which no worker sends a request: a 429's Retry-After holds every worker, not only the one told. */
export class RetryGate {
  private until = 0;
  pause(ms: number): void {
    this.until = Math.max(this.until, Date.now() + ms);
  }
  async pass(signal?: AbortSignal): Promise<void> {
    for (let wait = this.until - Date.now(); wait > 0; wait = this.until - Date.now()) {
      await sleep(wait, undefined, { signal }).catch(() => undefined);
      if (signal?.aborted) return;
    }
  }
}

/**
 * Retry-After in milliseconds from now; undefined when absent or unreadable. As the HTTP spec
 * allows it (delta-seconds or an HTTP date), or as the App Store Server API sends it: a UNIX time
 * in milliseconds ("Identifying rate limits"), told apart by its 12 or more digits.
 */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const text = value.trim();
  if (/^\d{1,9}$/.test(text)) return Number(text) * 1000;
  if (/^\d{12,16}$/.test(text)) return Math.max(0, Number(text) - now);
  const at = Date.parse(text);
  return Number.isFinite(at) ? Math.max(0, at - now) : undefined;
}

/**
 * Runs a store request, waiting out 429s (Retry-After, else backoff) and 5xx/network errors
 * (exponential backoff with jitter), up to `attempts` tries. An abort does not cut a wait short of
 * its request: a line in flight when SIGINT arrives still finishes or fails.
 */
export async function withStoreRetries<R>(run: () => Promise<R>, gate: RetryGate, policy: Partial<RetryPolicy> = {}, signal?: AbortSignal): Promise<R> {
  const p = { ...DEFAULT_RETRY, ...policy };
  for (let attempt = 1; ; attempt++) {
    await gate.pass();
    try {
      return await run();
    } catch (error) {
      if (!(error instanceof StoreRetryableError)) throw error;
      if (attempt >= p.attempts) throw new Error(`${error.message}; gave up after ${attempt} tries`, { cause: error });
      const backoff = Math.min(p.maxDelayMs, p.baseMs * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2);
      if (error.retryAfterMs !== undefined) gate.pause(Math.min(p.maxDelayMs, error.retryAfterMs));
      else await sleep(backoff, undefined, { signal }).catch(() => undefined);
    }
  }
}
