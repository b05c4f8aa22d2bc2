import { createHash } from 'node:crypto';
import { VerificationException, VerificationStatus } from '@apple/app-store-server-library';
import { mapDates, refuseUnstorableDates } from '../../store-notifications/store-dates.js';
import { appleToEvents, type AppleRenewalInfo, type AppleTransaction } from '../../store-notifications/apple/apple-to-events.js';
import type { AppleVerifier } from '../../store-notifications/apple/apple-verifier.js';
import { LineError } from '../import-errors.js';
import { skip, type ImportEvent, type LineResult, type SourceLine } from '../import-runner.js';
import { RetryGate, withStoreRetries, type RetryPolicy } from '../store-retry.js';
import type { AppleApiClient } from './apple-api-client.js';

/** How far back Apple keeps notification history. */
export const APPLE_NOTIFICATION_HISTORY_DAYS = 180;

export type NotificationWindow = { startDate: number; endDate: number; onlyFailures: boolean };

/** The journal's name for one notification-history query. */
export const windowDigest = (w: NotificationWindow) => createHash('sha256').update(`${w.startDate}|${w.endDate}|${w.onlyFailures}`).digest('hex');

/**
 * Get Notification History, every page, as the runner's lines: one signedPayload a line, numbered
 * in Apple's order. Paging is sequential (each page names the next); each request is retried like
 * the runner's.
 */
export function notificationHistoryLines(client: AppleApiClient, window: NotificationWindow, retry?: Partial<RetryPolicy>, signal?: AbortSignal): { lines: AsyncIterable<SourceLine>; fraction: () => number | undefined } {
  let at: number | undefined;
  const gate = new RetryGate();
  async function* lines(): AsyncGenerator<SourceLine> {
    let token: string | null = null;
    let n = 0;
    do {
      if (signal?.aborted) return;
      const page = await withStoreRetries(() => client.getNotificationHistory(token, { startDate: window.startDate, endDate: window.endDate, onlyFailures: window.onlyFailures || undefined }), gate, retry, signal);
      for (const item of page.notificationHistory ?? []) {
        n++;
        const text = item.signedPayload ?? '';
        at = signedDateOf(text) ?? at;
        yield { line: n, bytes: text.length, text };
      }
      token = page.hasMore ? (page.paginationToken ?? null) : null;
    } while (token);
  }
  return { lines: lines(), fraction: () => (at === undefined ? undefined : Math.max(0, Math.min(1, (at - window.startDate) / (window.endDate - window.startDate)))) };
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
  if (events.length === 0) return skip(`notification ${notification.notificationUUID} (${notification.notificationType ?? 'no type'}) carries no transaction state`);
  return { events: events as unknown as ImportEvent[] };
}

async function verified<T>(field: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof VerificationException) throw new LineError(`${field} failed verification: ${VerificationStatus[error.status] ?? error.status}`);
    throw error;
  }
}
