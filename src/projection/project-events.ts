import { assertNever } from '../common/assert-never.js';
import type { PurchaseEvent, TransactionSnapshot } from '../events/purchase-event.js';

/** Row images in the read-model tables' own column names (json_populate_recordset reads them). */
export type TransactionRow = {
  app_id: string;
  transaction_id: string;
  receipt_id: string;
  purchase_id: string;
  product_id: string;
  platform: string;
  sandbox: boolean | null;
  purchase_date: string | null;
  last_renewal_date: string | null;
  renewal_date: string | null;
  expiration_date: string | null;
  renewal_intent: string | null;
  renewal_intent_change_date: string | null;
  cancelation_reason: string | null;
  is_pending: boolean | null;
  is_acknowledged: boolean | null;
  is_consumed: boolean | null;
  is_billing_retry_period: boolean | null;
  is_trial_period: boolean | null;
  is_intro_period: boolean | null;
  is_expired: boolean | null;
  price_consent_status: string | null;
  discount_id: string | null;
  quantity: number | null;
  amount_usd: number | null;
  amount_micros: number | null;
  currency: string | null;
  occurred_at: string;
  version_time: string;
  version_id: string;
};
export type ReceiptRow = { app_id: string; receipt_id: string; application_username: string; version_time: string; version_id: string };
export type CustomerRow = { app_id: string; application_username: string; first_seen_at: string };

export type RowChanges = { transactions: TransactionRow[]; receipts: ReceiptRow[]; customers: CustomerRow[] };

type Versioned = { version_time: string; version_id: string };

/**
 * The ordering every projection decision rests on: later `time` wins, equal times go to the greater
 * `id` (byte order, as PostgreSQL's "C" collation compares them).
 */
export function isNewer(a: Versioned, b: Versioned): boolean {
  if (a.version_time !== b.version_time) return a.version_time > b.version_time;
  return Buffer.compare(Buffer.from(a.version_id), Buffer.from(b.version_id)) > 0;
}

/**
 * Maps a batch of already de-duplicated events to the row images the writer upserts. Applying the
 * result is order-independent: the table keeps the newest version per transaction and receipt link,
 * the earliest occurred_at per transaction and the earliest first_seen_at per customer; this
 * function applies the same rules inside the batch.
 */
export function projectEvents(events: readonly PurchaseEvent[]): RowChanges {
  const transactions = new Map<string, TransactionRow>();
  const receipts = new Map<string, ReceiptRow>();
  const customers = new Map<string, CustomerRow>();

  const seeCustomer = (appId: string, username: string, time: string) => {
    const key = `${appId}\u0000${username}`;
    const known = customers.get(key);
    if (!known || time < known.first_seen_at) customers.set(key, { app_id: appId, application_username: username, first_seen_at: time });
  };
  const link = (appId: string, receiptId: string, username: string, version: Versioned) => {
    const key = `${appId}\u0000${receiptId}`;
    const row: ReceiptRow = { app_id: appId, receipt_id: receiptId, application_username: username, ...version };
    const known = receipts.get(key);
    if (!known || isNewer(row, known)) receipts.set(key, row);
    seeCustomer(appId, username, version.version_time);
  };

  for (const event of events) {
    const version = { version_time: event.time, version_id: event.id };
    switch (event.type) {
      case 'transaction.updated': {
        const row = transactionRow(event.appId, event.data, version);
        const key = `${event.appId}\u0000${row.transaction_id}`;
        const known = transactions.get(key);
        if (!known) {
          transactions.set(key, row);
        } else {
          const winner = isNewer(row, known) ? row : known;
          const occurred_at = row.occurred_at < known.occurred_at ? row.occurred_at : known.occurred_at;
          transactions.set(key, { ...winner, occurred_at });
        }
        if (event.data.applicationUsername) link(event.appId, event.data.receiptId, event.data.applicationUsername, version);
        break;
      }
      case 'receipt.linked':
        link(event.appId, event.data.receiptId, event.data.applicationUsername, version);
        break;
      default:
        assertNever(event);
    }
  }
  return { transactions: [...transactions.values()], receipts: [...receipts.values()], customers: [...customers.values()] };
}

/**
 * occurred_at orders transactions and drives the date filter: the purchaseDate, which the stores
 * keep fixed for the life of a purchase, so later renewals never move a row. Deleted transactions
 * may arrive without one; they fall back to the time the event was observed. The earliest value
 * ever seen is kept.
 */
export function transactionRow(appId: string, d: TransactionSnapshot, version: Versioned): TransactionRow {
  return {
    app_id: appId,
    transaction_id: d.transactionId,
    receipt_id: d.receiptId,
    purchase_id: d.purchaseId,
    product_id: d.productId,
    platform: d.platform,
    sandbox: d.sandbox ?? null,
    purchase_date: d.purchaseDate ?? null,
    last_renewal_date: d.lastRenewalDate ?? null,
    renewal_date: d.renewalDate ?? null,
    expiration_date: d.expirationDate ?? null,
    renewal_intent: d.renewalIntent ?? null,
    renewal_intent_change_date: d.renewalIntentChangeDate ?? null,
    cancelation_reason: d.cancelationReason ?? null,
    is_pending: d.isPending ?? null,
    is_acknowledged: d.isAcknowledged ?? null,
    is_consumed: d.isConsumed ?? null,
    is_billing_retry_period: d.isBillingRetryPeriod ?? null,
    is_trial_period: d.isTrialPeriod ?? null,
    is_intro_period: d.isIntroPeriod ?? null,
    is_expired: d.isExpired ?? null,
    price_consent_status: d.priceConsentStatus ?? null,
    discount_id: d.discountId ?? null,
    quantity: d.quantity ?? null,
    amount_usd: d.amountUSD ?? null,
    amount_micros: d.amountMicros ?? null,
    currency: d.currency ?? null,
    occurred_at: d.purchaseDate ?? version.version_time,
    ...version,
  };
}
