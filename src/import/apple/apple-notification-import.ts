import { createHash } from 'node:crypto';
import { VerificationException, VerificationStatus } from '@apple/app-store-server-library';
import { mapDates, refuseUnstorableDates } from '../../store-notifications/store-dates.js';
import { appleToEvents, type AppleRenewalInfo, type AppleTransaction } from '../../store-notifications/apple/apple-to-events.js';
import type { AppleVerifier } from '../../store-notifications/apple/apple-verifier.js';
import { LineError } from '../import-errors.js';
import { BARRIER, skip, type ImportEvent, type LineResult, type SourceBarrier, type SourceLine } from '../import-runner.js';
import { RetryGate, withStoreRetries, type RetryPolicy } from '../store-retry.js';
import type { AppleApiClient } from './apple-api-client.js';
import { fromSource, SOURCES } from '../../events/provenance.js';

/** How far back Apple keeps notification history. */
export const APPLE_NOTIFICATION_HISTORY_DAYS = 180;

export type NotificationWindow = { startDate: number; endDate: number; onlyFailures: boolean };

/** The journal's name for one notification-history query. */
export const windowDigest = (w: NotificationWindow) => createHash('sha256').update(`${w.startDate}|${w.endDate}|${w.onlyFailures}`).digest('hex');

/**
 * Where a paged history query stands (public.import_checkpoint): the request it belongs to (Apple's
 * paginationToken is only good for the same request body) and the number of lines before it.
 */
type HistoryCheckpoint = { startDate: number; endDate: number; paginationToken: string; line: number };

/** The journal of the run: which keys are done, and the checkpoint to resume the history from. */
export type HistoryResume = {
  done(keys: readonly string[]): Promise<Set<string>>;
  checkpoint(): Promise<string | undefined>;
  saveCheckpoint(checkpoint: string): Promise<void>;
};

/**
 * Get Notification History, every page, as the runner's lines: one signedPayload a line, numbered
 * in Apple's order. Paging is sequential (each page names the next); each request is retried like
 * the runner's. Each page ends with a barrier: the runner publishes and records its lines before the
 * next page is asked for. With `resume()` (the run's journal), that page's paginationToken is then
 * saved if every line up to it is done (published or skipped; a failed line holds the checkpoint
 * back, so the next run asks again), and the next run starts there: the request it belongs to is
 * finished first, then the rest of this run's window is asked from where that request ended.
 */
export function notificationHistoryLines(
  client: AppleApiClient,
  window: NotificationWindow,
  retry?: Partial<RetryPolicy>,
  signal?: AbortSignal,
  resume?: () => HistoryResume | undefined,
): { lines: AsyncIterable<SourceLine | SourceBarrier>; fraction: () => number | undefined } {
  let at: number | undefined;
  const gate = new RetryGate();
  async function* query(
    journal: HistoryResume | undefined,
    startDate: number,
    endDate: number,
    from: { token: string | null; line: number },
  ): AsyncGenerator<SourceLine | SourceBarrier, number> {
    let token = from.token;
    let n = from.line;
    // Pages read whose lines may not be done yet: the token after each, and the keys before it.
    const pending: { token: string; line: number; keys: string[] }[] = [];
    do {
      if (signal?.aborted) return n;
      while (journal && pending.length > 0) {
        const oldest = pending[0];
        const done = await journal.done(oldest.keys);
        if (oldest.keys.some((k) => !done.has(k))) break;
        await journal.saveCheckpoint(JSON.stringify({ startDate, endDate, paginationToken: oldest.token, line: oldest.line } satisfies HistoryCheckpoint));
        pending.shift();
      }
      const page = await withStoreRetries(
        () => client.getNotificationHistory(token, { startDate, endDate, onlyFailures: window.onlyFailures || undefined }),
        gate,
        retry,
        signal,
      );
      const keys: string[] = [];
      for (const item of page.notificationHistory ?? []) {
        n++;
        const text = item.signedPayload ?? '';
        at = signedDateOf(text) ?? at;
        keys.push(notificationKey(text, n));
        yield { line: n, bytes: text.length, text };
      }
      token = page.hasMore ? (page.paginationToken ?? null) : null;
      if (token) {
        pending.push({ token, line: n, keys });
        yield BARRIER;
      }
    } while (token);
    return n;
  }
  async function* lines(): AsyncGenerator<SourceLine | SourceBarrier> {
    const journal = resume?.();
    const saved = parseCheckpoint(await journal?.checkpoint());
    if (saved && saved.startDate >= window.startDate && saved.endDate <= window.endDate) {
      const last = yield* query(journal, saved.startDate, saved.endDate, { token: saved.paginationToken, line: saved.line });
      // What this run's window holds after that request's end (notifications at its very end come twice: the journal counts them once).
      if (saved.endDate < window.endDate && !signal?.aborted) yield* query(journal, saved.endDate, window.endDate, { token: null, line: last });
      return;
    }
    yield* query(journal, window.startDate, window.endDate, { token: null, line: 0 });
  }
  return {
    lines: lines(),
    fraction: () => (at === undefined ? undefined : Math.max(0, Math.min(1, (at - window.startDate) / (window.endDate - window.startDate)))),
  };
}

function parseCheckpoint(text: string | undefined): HistoryCheckpoint | undefined {
  if (text === undefined) return undefined;
  try {
    const c = JSON.parse(text) as Partial<HistoryCheckpoint>;
    return typeof c.startDate === 'number' && typeof c.endDate === 'number' && typeof c.paginationToken === 'string' && typeof c.line === 'number'
      ? (c as HistoryCheckpoint)
      : undefined;
  } catch {
    return undefined;
  }
}

/** The notificationUUID of a signed payload, read without verifying (only a journal key: the events come from the verified payload). */
export function notificationKey(signedPayload: string, line: number): string {
  const claims = unverifiedClaims(signedPayload);
  return typeof claims?.notificationUUID === 'string' ? claims.notificationUUID : `line:${line}`;
}

function signedDateOf(signedPayload: string): number | undefined {
  const d = unverifiedClaims(signedPayload)?.signedDate;
  return typeof d === 'number' ? d : undefined;
}

function unverifiedClaims(jws: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(Buffer.from(jws.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/**
 * One notification of the history, exactly as POST /v2/notifications/apple/:appId takes it: the
 * same verification of signedPayload, signedTransactionInfo and signedRenewalInfo, the same date
 * checks and the same mapping, so the events carry the same ids (the notificationUUID) as if the
 * endpoint had received it, and one received already is not counted twice.
 */
export async function appleNotificationEvents(appId: string, verifier: AppleVerifier, signedPayload: string): Promise<LineResult> {
  const notification = await verified('signedPayload', () => verifier.verifyAndDecodeNotification(signedPayload));
  const signedTransaction = notification.data?.signedTransactionInfo;
  const signedRenewal = notification.data?.signedRenewalInfo;
  const transaction = signedTransaction ? await verified('signedTransactionInfo', () => verifier.verifyAndDecodeTransaction(signedTransaction)) : undefined;
  const renewal = signedRenewal ? await verified('signedRenewalInfo', () => verifier.verifyAndDecodeRenewalInfo(signedRenewal)) : undefined;
  try {
    refuseUnstorableDates('signedPayload', notification);
    refuseUnstorableDates('signedTransactionInfo', transaction);
    refuseUnstorableDates('signedRenewalInfo', renewal);
  } catch (error) {
    throw new LineError((error as Error).message);
  }
  const events = mapDates(() => appleToEvents(appId, notification, transaction as AppleTransaction | undefined, renewal as AppleRenewalInfo | undefined));
  if (events.length === 0)
    return skip(`notification ${notification.notificationUUID} (${notification.notificationType ?? 'no type'}) carries no transaction state`);
  return { events: fromSource(events, SOURCES.appleImport) as unknown as ImportEvent[] };
}

async function verified<T>(field: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof VerificationException) throw new LineError(`${field} failed verification: ${VerificationStatus[error.status] ?? error.status}`);
    throw error;
  }
}
