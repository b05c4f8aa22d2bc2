import { createHash } from 'node:crypto';
import {
  APIException,
  GetTransactionHistoryVersion,
  Order,
  VerificationException,
  VerificationStatus,
  type JWSRenewalInfoDecodedPayload,
  type JWSTransactionDecodedPayload,
} from '@apple/app-store-server-library';
import { mapDates, refuseUnstorableDates } from '../../store-notifications/store-dates.js';
import { appleToEvents, type AppleRenewalInfo, type AppleTransaction } from '../../store-notifications/apple/apple-to-events.js';
import type { AppleVerifier } from '../../store-notifications/apple/apple-verifier.js';
import { LineError } from '../import-errors.js';
import { skip, type ImportEvent, type LineResult } from '../import-runner.js';
import type { AppleApiClient } from './apple-api-client.js';
import { SOURCES } from '../../events/provenance.js';

/** One line of `import apple --file`: `transactionId[,applicationUsername]`. */
export type AppleImportLine = { transactionId: string; applicationUsername?: string };

/** Apple's transaction ids (and app transaction ids) are decimal strings. */
const TRANSACTION_ID = /^\d{1,30}$/;
const USERNAME_MAX = 255;

export function parseAppleImportLine(text: string, line: number): AppleImportLine {
  const [id, ...rest] = text.split(',');
  const transactionId = id.trim();
  const applicationUsername = rest.length > 0 ? rest.join(',').trim() : undefined;
  if (line === 1 && /^transaction_?id$/i.test(transactionId))
    throw new LineError('a header line: skip it by removing it (lines are transactionId[,applicationUsername])');
  if (!TRANSACTION_ID.test(transactionId))
    throw new LineError(
      `${JSON.stringify(transactionId.slice(0, 40))} is not an App Store transaction id (decimal digits); lines are transactionId[,applicationUsername]`,
    );
  if (applicationUsername !== undefined) {
    if (applicationUsername === '') throw new LineError('the applicationUsername after the comma is empty (leave out the comma for none)');
    if (Buffer.byteLength(applicationUsername) > USERNAME_MAX) throw new LineError(`the applicationUsername is over ${USERNAME_MAX} bytes`);
    // eslint-disable-next-line no-control-regex
    if (/[\u0000-\u001f\u007f]/.test(applicationUsername)) throw new LineError('the applicationUsername holds a control character');
  }
  return { transactionId, applicationUsername };
}

/** Get All Subscription Statuses' `status`: 2 expired (the mapping's EXPIRED), 1 active, 3 billing retry, 4 grace period, 5 revoked. */
const STATUS_EXPIRED = 2;
/** Apple's "no such transaction" (TransactionIdNotFoundError, OriginalTransactionIdNotFoundError). */
const NOT_FOUND = new Set([4040010, 4040005]);

const digest = (text: string) => createHash('sha256').update(text).digest('base64url').slice(0, 16);

/** Get All Subscription Statuses' answer, by original transaction id: each subscription's latest transaction and renewal state. */
export type AppleStatuses = Map<
  string,
  { transactionId?: string; status?: number; transaction?: JWSTransactionDecodedPayload; renewal?: JWSRenewalInfoDecodedPayload }
>;

/**
 * Get All Subscription Statuses for the customer `transactionId` belongs to: the latest transaction
 * and renewal info of each of their subscriptions (every group), each verified like a notification.
 */
export async function appleSubscriptionStatuses(
  client: AppleApiClient,
  verifier: AppleVerifier,
  transactionId: string,
): Promise<AppleStatuses | { skip: string }> {
  const renewals: AppleStatuses = new Map();
  try {
    const statuses = await client.getAllSubscriptionStatuses(transactionId);
    for (const group of statuses.data ?? []) {
      for (const last of group.lastTransactions ?? []) {
        const t = last.signedTransactionInfo
          ? await verified('a signedTransactionInfo of the subscription statuses', () => verifier.verifyAndDecodeTransaction(last.signedTransactionInfo!))
          : undefined;
        const renewal = last.signedRenewalInfo
          ? await verified('a signedRenewalInfo of the subscription statuses', () => verifier.verifyAndDecodeRenewalInfo(last.signedRenewalInfo!))
          : undefined;
        const original = last.originalTransactionId ?? t?.originalTransactionId ?? renewal?.originalTransactionId;
        if (original)
          renewals.set(original, {
            transactionId: t?.transactionId,
            status: typeof last.status === 'number' ? last.status : undefined,
            transaction: t,
            renewal,
          });
      }
    }
  } catch (error) {
    if (notFound(error)) return { skip: `Apple knows no transaction ${transactionId} for this app and environment (${notFound(error)})` };
    throw asLineError(error, `the subscription statuses of ${transactionId}`);
  }
  return renewals;
}

/**
 * The state of each of the customer's subscriptions as Get All Subscription Statuses says it (one
 * call), as the notification endpoint's events of their latest transactions: what the reconciler
 * compares first, asking for the whole history only when this disagrees with the read models.
 */
export async function appleStatusEvents(
  appId: string,
  client: AppleApiClient,
  verifier: AppleVerifier,
  transactionId: string,
): Promise<{ statuses: AppleStatuses; events: ImportEvent[] } | { skip: string }> {
  const statuses = await appleSubscriptionStatuses(client, verifier, transactionId);
  if (!(statuses instanceof Map)) return statuses;
  const latest = [...statuses.values()].flatMap((s) => (s.transaction ? [s.transaction] : []));
  if (latest.length === 0) return { skip: `Apple's subscription statuses of ${transactionId} name no transaction` };
  return { statuses, events: appleEvents(appId, latest, statuses, {}) };
}

/**
 * What Apple knows about the customer a transaction id belongs to, as the notification endpoint's
 * events: Get Transaction History v2 (every page, every product type, revoked ones included), each
 * transaction verified like a notification; Get All Subscription Statuses (unless `statuses` holds
 * its answer already) for the renewal state of each subscription's latest transaction. An event's
 * time is the latest signedDate of what it is built from (the instant Apple vouched for that state),
 * so a newer notification wins over it and it wins over older ones; its id is
 * `apple-import:<transactionId>:<that signedDate>`, so the same answer imported twice is one event.
 */
export async function appleTransactionEvents(
  appId: string,
  client: AppleApiClient,
  verifier: AppleVerifier,
  line: AppleImportLine,
  statuses?: AppleStatuses,
): Promise<LineResult> {
  const transactions: JWSTransactionDecodedPayload[] = [];
  try {
    let revision: string | null = null;
    for (let page = 0; ; page++) {
      const history = await client.getTransactionHistory(line.transactionId, revision, { sort: Order.ASCENDING }, GetTransactionHistoryVersion.V2);
      for (const signed of history.signedTransactions ?? [])
        transactions.push(await verified('a signedTransaction of the transaction history', () => verifier.verifyAndDecodeTransaction(signed)));
      if (!history.hasMore) break;
      if (!history.revision || history.revision === revision)
        throw new LineError(`the transaction history of ${line.transactionId} says hasMore without a new revision (page ${page + 1})`);
      revision = history.revision;
    }
  } catch (error) {
    if (notFound(error)) return skip(`Apple knows no transaction ${line.transactionId} for this app and environment (${notFound(error)})`);
    throw asLineError(error, `the transaction history of ${line.transactionId}`);
  }
  if (transactions.length === 0) return skip(`Apple's transaction history of ${line.transactionId} is empty`);

  let renewals: AppleStatuses = statuses ?? new Map();
  if (!statuses && transactions.some((t) => t.expiresDate !== undefined)) {
    const answer = await appleSubscriptionStatuses(client, verifier, line.transactionId);
    if (!(answer instanceof Map)) throw new LineError(`the history of ${line.transactionId} was found, its subscription statuses not: ${answer.skip}`);
    renewals = answer;
  }
  const events = appleEvents(appId, transactions, renewals, line);
  return events.length > 0 ? { events } : skip(`the transaction history of ${line.transactionId} maps to no event`);
}

/** Apple's "no such transaction" as `code: message`, or undefined for any other error. */
function notFound(error: unknown): string | undefined {
  return error instanceof APIException && error.apiError !== null && NOT_FOUND.has(Number(error.apiError))
    ? `${error.apiError}: ${error.errorMessage ?? 'not found'}`
    : undefined;
}

/** Apple's transactions, with the renewal state of each subscription's latest, mapped as the notification endpoint maps them. */
function appleEvents(
  appId: string,
  transactions: readonly JWSTransactionDecodedPayload[],
  renewals: AppleStatuses,
  line: Partial<AppleImportLine>,
): ImportEvent[] {
  const events: ImportEvent[] = [];
  const receipts = new Set<string>();
  let newest = 0;
  for (const t of transactions) {
    refuseUnstorable('a transaction of the history', t);
    const original = t.originalTransactionId ?? t.transactionId!;
    receipts.add(original);
    const state = renewals.get(original);
    const latest = state !== undefined && state.transactionId === t.transactionId;
    const renewal = latest ? state.renewal : undefined;
    if (renewal) refuseUnstorable('a renewal info of the subscription statuses', renewal);
    const signedAt = Math.max(t.signedDate ?? 0, renewal?.signedDate ?? 0);
    if (signedAt <= 0) throw new LineError(`transaction ${t.transactionId} carries no signedDate`);
    newest = Math.max(newest, signedAt);
    const notification = {
      notificationType: latest && state.status === STATUS_EXPIRED ? 'EXPIRED' : undefined,
      notificationUUID: `apple-import:${t.transactionId}:${signedAt}`,
      signedDate: signedAt,
      data: { environment: t.environment },
    };
    const mapped = mapDates(() => appleToEvents(appId, notification, t as AppleTransaction, renewal as AppleRenewalInfo | undefined));
    events.push(...(mapped as unknown as ImportEvent[]));
  }
  // The username the file names links every receipt the history holds (the customer's), as of the newest answer.
  if (line.applicationUsername) {
    for (const original of receipts) {
      events.push({
        specversion: '1.0',
        id: `apple-import:${original}:${newest}:link:${digest(line.applicationUsername)}`,
        source: SOURCES.appleImport,
        type: 'receipt.linked',
        time: new Date(newest).toISOString(),
        appid: appId,
        datacontenttype: 'application/json',
        data: { receiptId: `apple:${original}`, applicationUsername: line.applicationUsername },
      });
    }
  }
  return events;
}

function refuseUnstorable(what: string, payload: object): void {
  try {
    refuseUnstorableDates(what, payload);
  } catch (error) {
    throw new LineError((error as Error).message);
  }
}

async function verified<T>(what: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof VerificationException) throw new LineError(`${what} failed verification: ${VerificationStatus[error.status] ?? error.status}`);
    throw error;
  }
}

/** An answer of Apple's that no retry changes (4xx but 401/429, or an answer the library's validators refuse): the line fails, named. */
function asLineError(error: unknown, what: string): unknown {
  if (error instanceof APIException)
    return new LineError(
      `Apple refused ${what}: HTTP ${error.httpStatusCode}${error.apiError ? ` ${error.apiError}` : ''}${error.errorMessage ? ` (${error.errorMessage})` : ''}`,
    );
  if (error instanceof Error && error.message === 'Unexpected response body format')
    return new LineError(`Apple's answer for ${what} is not of the documented shape`);
  return error;
}
