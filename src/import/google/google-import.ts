// Google Play purchases brought in from the Play Developer API: the same events the notification
// endpoint publishes (google-to-events.ts is the one mapping), with ids derived from what was fetched.
import type { androidpublisher_v3 } from '@googleapis/androidpublisher';
import { createHash } from 'node:crypto';
import type { ContractEvent } from '../../store-notifications/apple/apple-to-events.js';
import type { StoredTransaction } from '../../store-notifications/stored-transaction.js';
import type { GooglePlayApi } from '../../store-notifications/google/google-play.js';
import {
  googleProductEvents,
  googleReplacedEvents,
  googleSubscriptionEvents,
  googleVoidedEvents,
  googleVoidRefund,
  revokedWhole,
} from '../../store-notifications/google/google-to-events.js';
import { ImportFatalError, LineError, StoreRetryableError } from '../import-errors.js';
import type { ImportEvent, LineResult } from '../import-runner.js';
import { parseRetryAfter } from '../store-retry.js';

type SubscriptionV2 = androidpublisher_v3.Schema$SubscriptionPurchaseV2;

/** One line of an `import google` file: purchaseToken[,productId for one-time products][,applicationUsername]. */
export type GoogleImportLine = { purchaseToken: string; productId?: string; applicationUsername?: string };

/** Google's purchase tokens are opaque but printable; this only keeps garbage out of the URL. */
const TOKEN = /^[A-Za-z0-9._\-:~+/=]{1,1024}$/;
const PRODUCT_ID = /^[a-z0-9][a-z0-9._]{0,148}$/i;
const USERNAME_MAX = 200;
/** An upgrade chain longer than this is refused as a loop. */
export const MAX_LINKED_PURCHASES = 50;

export function parseGoogleLine(text: string): GoogleImportLine {
  const fields = text.split(',').map((f) => f.trim());
  if (fields.length > 3) throw new LineError(`expected purchaseToken[,productId][,applicationUsername], found ${fields.length} fields`);
  const [purchaseToken = '', productId = '', applicationUsername = ''] = fields;
  if (!purchaseToken) throw new LineError('the purchase token is empty');
  if (!TOKEN.test(purchaseToken)) throw new LineError('the purchase token is not a Google purchase token (letters, digits and ._-:~+/= only, at most 1024)');
  if (productId && !PRODUCT_ID.test(productId)) throw new LineError(`${JSON.stringify(productId.slice(0, 80))} is not a Play product id`);
  if (Buffer.byteLength(applicationUsername) > USERNAME_MAX || /[\p{Cc}]/u.test(applicationUsername)) {
    throw new LineError(`the applicationUsername must be 1-${USERNAME_MAX} UTF-8 bytes without control characters`);
  }
  return { purchaseToken, productId: productId || undefined, applicationUsername: applicationUsername || undefined };
}

/** What one Play API call answered, by how an import should treat it. */
export type GoogleCallFailure =
  | { kind: 'forgotten'; status: number; message: string }
  | { kind: 'rate-limited'; status: 429; retryAfterMs?: number; message: string }
  | { kind: 'refused'; status: number; message: string }
  | { kind: 'unavailable'; status?: number; message: string };

/**
 * 404 and 410 are tokens Google no longer knows (expired for long): skipped. 429 waits (Retry-After
 * in seconds or an HTTP date). 401/403 are our credentials or the app's linking: fatal for every
 * line alike. Anything else (5xx, network) may pass on a retry.
 */
export function classifyGoogleCall(error: unknown, now = Date.now()): GoogleCallFailure {
  const e = error as {
    status?: number;
    code?: unknown;
    response?: { status?: number; headers?: unknown; data?: { error?: { message?: string } } };
    message?: string;
  };
  const status = e.response?.status ?? e.status ?? (typeof e.code === 'number' ? e.code : undefined);
  const message = e.response?.data?.error?.message ?? e.message ?? String(error);
  if (status === 404 || status === 410) return { kind: 'forgotten', status, message };
  if (status === 429) return { kind: 'rate-limited', status, retryAfterMs: parseRetryAfter(header(e.response?.headers, 'retry-after'), now), message };
  if (status === 400 || status === 401 || status === 403) return { kind: 'refused', status, message };
  return { kind: 'unavailable', status, message };
}

function header(headers: unknown, name: string): string | undefined {
  if (!headers) return undefined;
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const v = (headers as Record<string, unknown>)[name];
  return typeof v === 'string' ? v : undefined;
}

/**
 * A failed Play API call as the import runner treats it: 429 and 5xx/network are retried (429 with
 * its Retry-After), 401/403 stop the run (the service account or the app's API access, the same
 * for every line), a 400 fails the line.
 */
export function googleCallError(failure: GoogleCallFailure): Error {
  const said = `the Play Developer API answered ${failure.status ? `HTTP ${failure.status}` : 'nothing'}: ${failure.message}`;
  if (failure.kind === 'rate-limited') return new StoreRetryableError(said, { reason: 'rate-limited', retryAfterMs: failure.retryAfterMs });
  if (failure.kind === 'unavailable') return new StoreRetryableError(said, { reason: 'unavailable' });
  if (failure.status === 401 || failure.status === 403) {
    return new ImportFatalError(`${said} (check GOOGLE_SERVICE_ACCOUNT_FILE: the account needs "View financial data" in Play Console for this app)`);
  }
  return new LineError(said);
}

/** A date in the fetched state that is no date (RangeError from toISOString) fails the line, not the run. */
function mapped<T>(run: () => T): T {
  try {
    return run();
  } catch (error) {
    if (error instanceof RangeError) throw new LineError('a date in the purchase state Google answered is not a valid date');
    throw error;
  }
}

/**
 * The message id standing in for a notification's: the fetched state's digest. Importing the same
 * state again yields the same event ids (the projection applies an id once); a changed state yields
 * new ones, and the fetch time orders it among notifications like the notification path does.
 */
export function importMessageId(kind: string, token: string, state: unknown, extra = ''): string {
  return `google-import:${createHash('sha256')
    .update(`${kind}\n${token}\n${extra}\n${JSON.stringify(state)}`)
    .digest('base64url')
    .slice(0, 32)}`;
}

type Fetched<T> = { ok: true; value: T } | { ok: false; forgotten: GoogleCallFailure };

async function call<T>(run: () => Promise<T>): Promise<Fetched<T>> {
  try {
    return { ok: true, value: await run() };
  } catch (error) {
    const failure = classifyGoogleCall(error);
    if (failure.kind === 'forgotten') return { ok: false, forgotten: failure };
    throw googleCallError(failure);
  }
}

/**
 * Fetches one line's purchase and maps it: a subscription (subscriptionsv2.get, then every purchase
 * it replaced through linkedPurchaseToken, each marked upgraded) or, with a productId, a one-time
 * product (products.get). A token Google no longer knows is skipped with the reason.
 */
export async function importGooglePurchase(
  api: GooglePlayApi,
  appId: string,
  packageName: string,
  line: GoogleImportLine,
  now: () => Date = () => new Date(),
): Promise<LineResult> {
  const { purchaseToken, productId, applicationUsername } = line;
  if (productId) {
    const fetched = await call(() => api.product(packageName, productId, purchaseToken));
    if (!fetched.ok) return { skip: `Google does not know this one-time purchase (HTTP ${fetched.forgotten.status}: ${fetched.forgotten.message})` };
    const purchase = fetched.value;
    const p = applicationUsername && !purchase.obfuscatedExternalAccountId ? { ...purchase, obfuscatedExternalAccountId: applicationUsername } : purchase;
    const events = mapped(() => googleProductEvents(appId, importMessageId('product', purchaseToken, p, productId), purchaseToken, productId, p, now()));
    return events.length ? { events: asImportEvents(events) } : { skip: 'Google answers no order id for this one-time purchase: nothing to record' };
  }
  const fetched = await call(() => api.subscription(packageName, purchaseToken));
  if (!fetched.ok)
    return {
      skip: `Google does not know this subscription purchase (HTTP ${fetched.forgotten.status}: ${fetched.forgotten.message}); a one-time product needs its productId on the line`,
    };
  const state = fetched.value;
  const s = withUsername(state, applicationUsername);
  const events = mapped(() => googleSubscriptionEvents(appId, importMessageId('subscription', purchaseToken, s), purchaseToken, s, now()));
  if (events.length === 0) return { skip: 'Google answers no product or order for this subscription: nothing to record' };
  const seen = new Set([purchaseToken]);
  let linked = state.linkedPurchaseToken;
  while (linked && !seen.has(linked) && seen.size <= MAX_LINKED_PURCHASES) {
    const replacedToken = linked;
    seen.add(replacedToken);
    const older = await call(() => api.subscription(packageName, replacedToken));
    // A replaced purchase Google forgot ends the chain: the newer ones are still recorded.
    if (!older.ok) break;
    const replaced = older.value;
    events.push(...mapped(() => googleReplacedEvents(appId, importMessageId('replaced', replacedToken, replaced), replacedToken, replaced, now())));
    linked = replaced.linkedPurchaseToken;
  }
  return { events: asImportEvents(events) };
}

function withUsername(s: SubscriptionV2, username: string | undefined): SubscriptionV2 {
  if (!username || s.externalAccountIdentifiers?.obfuscatedExternalAccountId) return s;
  return { ...s, externalAccountIdentifiers: { ...s.externalAccountIdentifiers, obfuscatedExternalAccountId: username } };
}

/** What the read models show of an order (storedTransaction: the contract's field names, absent fields left out) and that snapshot's event time. */
export type StoredOrder = StoredTransaction;

/**
 * A voided purchase from voidedpurchases.list: the same revocation a VoidedPurchaseNotification
 * produces (the stored order, revoked at voidedTimeMillis). Its time is voidedTimeMillis, or just
 * after the snapshot it revokes when that was fetched later (an import after the refund: Google's
 * purchase state does not show a refund, so the revocation must follow the snapshot to count).
 * Its id names the order and the void, so a poll or import that sees it again publishes nothing
 * new. Google's list names only the order: one the read models do not hold is skipped (import its
 * purchase token first). A quantity-based partial refund (voidedQuantity) revokes the order with the
 * share of its units refunded so far (googleVoidRefund); a later void of the same order adds to it.
 */
export function googleVoidedImportEvents(
  appId: string,
  v: androidpublisher_v3.Schema$VoidedPurchase,
  fromReadModels: StoredOrder | undefined,
  published?: Map<string, StoredOrder>,
): LineResult {
  if (!v.orderId) return { skip: 'the voided purchase carries no orderId' };
  // The read models follow the log asynchronously: within one run, an order's snapshot this run
  // already published is the newer, so a second partial refund adds to the first instead of replacing it.
  const mine = published?.get(v.orderId);
  const stored = mine && (!fromReadModels || mine.versionTime >= fromReadModels.versionTime) ? mine : fromReadModels;
  const ms = /^\d{1,16}$/.test(v.voidedTimeMillis ?? '') ? Number(v.voidedTimeMillis) : NaN;
  if (!Number.isFinite(ms)) return { skip: `order ${v.orderId}: voidedTimeMillis is not epoch milliseconds` };
  if (!stored) return { skip: `order ${v.orderId} is not in the read models: nothing to revoke (import its purchase token with \`import google\` first)` };
  if (revokedWhole(stored.snapshot)) return { skip: `order ${v.orderId} is revoked already (${String(stored.snapshot.revocationDate)})` };
  // A void the order shows already (revoked at its time or later: by this void, a later one, or the
  // refund's own notification) is not applied again: a partial refund listed twice would count twice.
  const revokedAt = Date.parse(String(stored.snapshot.revocationDate ?? ''));
  if (revokedAt >= ms) return { skip: `order ${v.orderId} shows this void already (revoked ${String(stored.snapshot.revocationDate)})` };
  const refund = googleVoidRefund(v.voidedQuantity, stored.snapshot);
  if ('skip' in refund) return { skip: `order ${v.orderId}: ${refund.skip}` };
  const voidedAt = new Date(ms);
  const time = new Date(Math.max(ms, stored.versionTime.getTime() + 1));
  const messageId = `google-voided:${createHash('sha256').update(`${v.orderId}\n${v.voidedTimeMillis}`).digest('base64url').slice(0, 32)}`;
  const events = mapped(() => googleVoidedEvents(appId, messageId, stored.snapshot, voidedAt, time, refund));
  const snapshot = events.find((e) => e.type === 'transaction.updated')?.data;
  if (published && snapshot) published.set(v.orderId, { snapshot: snapshot as Record<string, unknown>, versionTime: time });
  return { events: asImportEvents(events) };
}

const asImportEvents = (events: ContractEvent[]) => events as unknown as ImportEvent[];
