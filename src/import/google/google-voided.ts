import type { androidpublisher_v3 } from '@googleapis/androidpublisher';
import type { DataSource } from 'typeorm';
import type { GooglePlayApi } from '../../store-notifications/google/google-play.js';
import { storedTransaction } from '../../store-notifications/stored-transaction.js';
import { ImportFatalError } from '../import-errors.js';
import { RetryGate, withStoreRetries, type RetryPolicy } from '../store-retry.js';
import { classifyGoogleCall, googleCallError, type StoredOrder } from './google-import.js';

type VoidedPurchase = androidpublisher_v3.Schema$VoidedPurchase;

export const GOOGLE_VOIDED_KIND = 'google-voided';
/** Google lists voided purchases of the last 30 days: an older startTime is refused. */
export const VOIDED_RETENTION_MS = 30 * 24 * 3_600_000;
/** Google's largest page of voidedpurchases.list. */
const PAGE_SIZE = 1000;

/** A void is one order voided at one time: the journal's key for it, whatever listing it came in. */
export const voidedItemKey = (v: VoidedPurchase): string => `${v.orderId ?? ''}@${v.voidedTimeMillis ?? ''}`;

/**
 * Every voided purchase (subscriptions included: type 1) Google saw voided since `startTime`, page by
 * page through tokenPagination.nextPageToken. A 429 or 5xx is retried (Retry-After honoured);
 * anything else stops the listing with the API's words.
 */
export async function* listVoidedPurchases(
  api: GooglePlayApi,
  packageName: string,
  startTime: number,
  retry?: Partial<RetryPolicy>,
  signal?: AbortSignal,
): AsyncGenerator<VoidedPurchase> {
  const gate = new RetryGate();
  let token: string | undefined;
  do {
    const pageToken = token;
    const page = await withStoreRetries(
      async () => {
        try {
          return await api.voidedPurchases(packageName, pageToken ? { token: pageToken, maxResults: PAGE_SIZE } : { startTime, maxResults: PAGE_SIZE });
        } catch (error) {
          const failure = classifyGoogleCall(error);
          if (failure.kind === 'forgotten' || failure.kind === 'refused') {
            throw new ImportFatalError(
              `voidedpurchases.list for ${packageName} answered HTTP ${failure.status}: ${failure.message}${failure.status === 401 || failure.status === 403 ? ' (check GOOGLE_SERVICE_ACCOUNT_FILE: the account needs "View financial data" in Play Console for this app)' : ''}`,
            );
          }
          throw googleCallError(failure);
        }
      },
      gate,
      retry,
      signal,
    );
    for (const v of page.voidedPurchases ?? []) yield v;
    token = page.tokenPagination?.nextPageToken ?? undefined;
  } while (token && !signal?.aborted);
}

/** What the read models show of an order (the notification endpoint's own columns) and the time of the snapshot it shows, or undefined. */
export async function storedOrder(db: DataSource, appId: string, orderId: string | null | undefined): Promise<StoredOrder | undefined> {
  if (!orderId) return undefined;
  return storedTransaction(db, appId, `google:${orderId}`);
}
