import { createHash } from 'node:crypto';
import { assertNever } from '../common/assert-never.js';
import { byteOrder } from '../common/byte-order.js';
import { replacements } from '../customers/customer-summary.js';
import { isRedacted } from '../customers/erase-customer/erasure-hash.js';
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
  grace_period_expiration_date: string | null;
  revocation_date: string | null;
  revocation_type: string | null;
  refunded_share: number | null;
  is_upgraded: boolean | null;
  /**
   * isUpgraded and cancelationReason as the winning snapshot says them. The shown is_upgraded and
   * cancelation_reason are these, unless another transaction replaced this one (replacementFlags).
   */
  snapshot_is_upgraded: boolean | null;
  snapshot_cancelation_reason: string | null;
  price_consent_status: string | null;
  discount_id: string | null;
  offer_type: string | null;
  offer_discount_type: string | null;
  offer_period: string | null;
  ownership_type: string | null;
  quantity: number | null;
  amount_usd: number | null;
  amount_micros: number | null;
  currency: string | null;
  /** The transaction date (see transactionDate): orders rows and drives startdate/enddate. */
  occurred_at: string;
  /** `time` of the earliest event seen for the transaction: the date of last resort. */
  first_event_at: string;
  version_time: string;
  version_id: string;
  /** snapshotDigest of the stored snapshot; NULL on rows stored before it was kept. */
  snapshot_digest: string | null;
  /**
   * Provenance (docs/api.md): the event that made the row say what it says, its source and when
   * the log received it. A newer event saying the same keeps it (mergeTransaction).
   */
  state_event_id: string | null;
  state_source: string | null;
  state_received_at: string | null;
};
export type ReceiptRow = {
  app_id: string;
  receipt_id: string;
  /** null: the winning link named a customer erased after it (docs/privacy.md): the receipt has no owner. */
  application_username: string | null;
  /** true: from a receipt.linked event; false: from a transaction's applicationUsername. */
  explicit: boolean;
  version_time: string;
  version_id: string;
};
export type CustomerRow = { app_id: string; application_username: string; first_seen_at: string };

/** A customer.erased event: the username (or its keyed hash) forgotten for events dated at or before erased_at. */
export type ErasureRow = { app_id: string; username_hash?: string; application_username?: string; erased_at: string; event_id: string };

export type RowChanges = {
  transactions: TransactionRow[];
  /**
   * Per app and transaction id (joined by NUL) with more than one snapshot in the batch: each in
   * log order, for merging into the stored row one by one (provenance follows log order).
   */
  transactionSteps?: ReadonlyMap<string, readonly TransactionRow[]>;
  receipts: ReceiptRow[];
  customers: CustomerRow[];
  erasures: ErasureRow[];
};

/**
 * Whether an event of `appId` dated `time` naming `username` names no one: the customer was erased
 * at or after `time` (docs/privacy.md). The writer answers it from the erasures stored and in the batch.
 */
export type IsErased = (appId: string, username: string, time: string) => boolean;
const nothingErased: IsErased = () => false;

type Versioned = { version_time: string; version_id: string };

/**
 * The ordering every projection decision rests on: later `time` wins, equal times go to the greater
 * `id` (byte order, as PostgreSQL's "C" collation compares them).
 */
export function isNewer(a: Versioned, b: Versioned): boolean {
  if (a.version_time !== b.version_time) return a.version_time > b.version_time;
  return byteOrder(a.version_id, b.version_id) > 0;
}

/**
 * The transaction date (docs/api.md, "Transaction date"): when this transaction was charged, read
 * from the winning snapshot: lastRenewalDate, else renewalDate, else purchaseDate, else the time of
 * the first event seen for the transaction.
 */
export function transactionDate(snapshot: Pick<TransactionRow, 'last_renewal_date' | 'renewal_date' | 'purchase_date'>, firstEventAt: string): string {
  return snapshot.last_renewal_date ?? snapshot.renewal_date ?? snapshot.purchase_date ?? firstEventAt;
}

/**
 * The fields of a snapshot a transaction row stores, each as its column and the contract's field
 * (docs/events/README.md), in the order that page gives for the tie-break ("Ordering rules"); the
 * shown is_upgraded and cancelation_reason are left out (a replacement changes them), their
 * snapshot_ columns stand in. transactionRow writes each column from its field (one literal, for
 * speed; project-events.spec holds it to this table); the reconciler publishes rows back through it.
 */
export const SNAPSHOT_CONTRACT = [
  ['receipt_id', 'receiptId'],
  ['purchase_id', 'purchaseId'],
  ['product_id', 'productId'],
  ['platform', 'platform'],
  ['sandbox', 'sandbox'],
  ['purchase_date', 'purchaseDate'],
  ['last_renewal_date', 'lastRenewalDate'],
  ['renewal_date', 'renewalDate'],
  ['expiration_date', 'expirationDate'],
  ['renewal_intent', 'renewalIntent'],
  ['renewal_intent_change_date', 'renewalIntentChangeDate'],
  ['snapshot_cancelation_reason', 'cancelationReason'],
  ['is_pending', 'isPending'],
  ['is_acknowledged', 'isAcknowledged'],
  ['is_consumed', 'isConsumed'],
  ['is_billing_retry_period', 'isBillingRetryPeriod'],
  ['is_trial_period', 'isTrialPeriod'],
  ['is_intro_period', 'isIntroPeriod'],
  ['is_expired', 'isExpired'],
  ['grace_period_expiration_date', 'gracePeriodExpirationDate'],
  ['revocation_date', 'revocationDate'],
  ['snapshot_is_upgraded', 'isUpgraded'],
  ['price_consent_status', 'priceConsentStatus'],
  ['discount_id', 'discountId'],
  ['offer_type', 'offerType'],
  ['offer_discount_type', 'offerDiscountType'],
  ['offer_period', 'offerPeriod'],
  ['ownership_type', 'ownershipType'],
  ['quantity', 'quantity'],
  ['amount_usd', 'amountUSD'],
  ['amount_micros', 'amountMicros'],
  ['currency', 'currency'],
  ['revocation_type', 'revocationType'],
  ['refunded_share', 'refundedShare'],
] as const satisfies readonly (readonly [keyof TransactionRow, keyof TransactionSnapshot])[];
const SNAPSHOT_FIELDS = SNAPSHOT_CONTRACT.map(([column]) => column);
export type SnapshotFields = Pick<TransactionRow, (typeof SNAPSHOT_CONTRACT)[number][0]>;

/**
 * SHA-256 (hex) of what a snapshot says: its stored fields as strings (or null), a JSON array. Equal
 * for equal content whether it comes from an event or is read back from its row (times in the
 * decoder's six-digit UTC form, which `iso()` also gives; a bigint read back as text, a number as
 * JavaScript prints it), so live batches and the rebuild break ties between equal versions alike.
 */
export function snapshotDigest(row: SnapshotFields): string {
  const values = SNAPSHOT_FIELDS.map((f) => (row[f] === null || row[f] === undefined ? null : String(row[f])));
  return createHash('sha256').update(JSON.stringify(values)).digest('hex');
}

/**
 * Whether `incoming` replaces `known` as a transaction's newest snapshot: newer (time, id), or, for
 * the same time and id (a producer that reused an id for other data), the greater content digest.
 * The same content loses: it changes nothing.
 */
export function snapshotWins(incoming: TransactionRow, known: TransactionRow): boolean {
  if (incoming.version_time !== known.version_time || incoming.version_id !== known.version_id) return isNewer(incoming, known);
  return snapshotDigest(incoming) > snapshotDigest(known);
}

/**
 * What the stored row must become once `incoming` is known too; for every stored and shown value
 * but provenance, arrival order does not matter. Provenance is the event that made the row say what
 * it says, in log order: a winning snapshot with other content takes it over, one saying the same
 * (a store re-sending a state, an import of what a notification brought) leaves it.
 */
export function mergeTransaction(known: TransactionRow, incoming: TransactionRow): TransactionRow {
  const wins = snapshotWins(incoming, known);
  const winner = wins ? incoming : known;
  const state = wins && !sameContent(incoming, known) ? incoming : known;
  const first_event_at = incoming.first_event_at < known.first_event_at ? incoming.first_event_at : known.first_event_at;
  return {
    ...winner,
    first_event_at,
    occurred_at: transactionDate(winner, first_event_at),
    state_event_id: state.state_event_id,
    state_source: state.state_source,
    state_received_at: state.state_received_at,
  };
}

/** Both digests known and equal: a row stored before digests were kept says nothing known. */
const sameContent = (a: Pick<TransactionRow, 'snapshot_digest'>, b: Pick<TransactionRow, 'snapshot_digest'>) =>
  a.snapshot_digest !== null && a.snapshot_digest === b.snapshot_digest;

type Link = Pick<ReceiptRow, 'explicit' | 'version_time' | 'version_id' | 'application_username'>;

/** (time, id, username): links of one event id reused for other usernames are ordered by the username's bytes. */
function isLater(a: Link, b: Link): boolean {
  if (a.version_time !== b.version_time || a.version_id !== b.version_id) return isNewer(a, b);
  return byteOrder(a.application_username ?? '', b.application_username ?? '') > 0;
}

/**
 * Receipt ownership (docs/api.md, "Receipt ownership"): any receipt.linked beats a link taken from
 * a transaction's applicationUsername; among receipt.linked the newest wins, among the others the
 * earliest, so a renewal that still carries the original username cannot undo a restore.
 */
export function linkWins(candidate: Link, stored: Link): boolean {
  if (candidate.explicit !== stored.explicit) return candidate.explicit;
  return candidate.explicit ? isLater(candidate, stored) : isLater(stored, candidate);
}

/**
 * Maps a batch of events (a repeated id resolves like any other snapshot) to the row images the
 * writer stores, applying within the batch the same rules the writer applies against stored rows (mergeTransaction, linkWins, the
 * earliest first_seen_at per customer), so any split of the events into batches gives one result.
 */
export function projectEvents(events: readonly PurchaseEvent[], isErased: IsErased = nothingErased): RowChanges {
  const transactions = new Map<string, TransactionRow>();
  const steps = new Map<string, TransactionRow[]>();
  const receipts = new Map<string, ReceiptRow>();
  const customers = new Map<string, CustomerRow>();
  const erasures: ErasureRow[] = [];

  const seeCustomer = (appId: string, username: string, time: string) => {
    const key = `${appId}\u0000${username}`;
    const known = customers.get(key);
    if (!known || time < known.first_seen_at) customers.set(key, { app_id: appId, application_username: username, first_seen_at: time });
  };
  const link = (appId: string, receiptId: string, username: string, explicit: boolean, version: Versioned) => {
    const key = `${appId}\u0000${receiptId}`;
    // A link from before the customer's erasure still competes (its version), but names no one.
    const erased = isRedacted(username) || isErased(appId, username, version.version_time);
    const row: ReceiptRow = { app_id: appId, receipt_id: receiptId, application_username: erased ? null : username, explicit, ...version };
    const known = receipts.get(key);
    if (!known || linkWins(row, known)) receipts.set(key, row);
    if (!erased) seeCustomer(appId, username, version.version_time);
  };

  for (const event of events) {
    const version = { version_time: event.time, version_id: event.id };
    switch (event.type) {
      case 'transaction.updated': {
        const row = transactionRow(event.appId, event.data, version, event);
        const key = `${event.appId}\u0000${row.transaction_id}`;
        const known = transactions.get(key);
        transactions.set(key, known ? mergeTransaction(known, row) : row);
        if (known) {
          const list = steps.get(key);
          if (list) list.push(row);
          else steps.set(key, [known, row]);
        }
        if (event.data.applicationUsername) link(event.appId, event.data.receiptId, event.data.applicationUsername, false, version);
        break;
      }
      case 'receipt.linked':
        link(event.appId, event.data.receiptId, event.data.applicationUsername, true, version);
        break;
      case 'customer.erased':
        erasures.push({
          app_id: event.appId,
          ...(event.data.usernameHash !== undefined ? { username_hash: event.data.usernameHash } : { application_username: event.data.applicationUsername }),
          erased_at: event.time,
          event_id: event.id,
        });
        break;
      default:
        assertNever(event);
    }
  }
  return { transactions: [...transactions.values()], transactionSteps: steps, receipts: [...receipts.values()], customers: [...customers.values()], erasures };
}

/** One snapshot as a row image; on its own it is its transaction's first event. */
export function transactionRow(
  appId: string,
  d: TransactionSnapshot,
  version: Versioned,
  event: { source?: string; receivedAt?: string } = {},
): TransactionRow {
  // One literal, no spreads: this runs for every event of every batch.
  const purchase_date = d.purchaseDate ?? null;
  const cancelation_reason = d.cancelationReason ?? null;
  const is_upgraded = d.isUpgraded ?? null;
  const last_renewal_date = d.lastRenewalDate ?? null;
  const renewal_date = d.renewalDate ?? null;
  const row: TransactionRow = {
    app_id: appId,
    transaction_id: d.transactionId,
    receipt_id: d.receiptId,
    purchase_id: d.purchaseId,
    product_id: d.productId,
    platform: d.platform,
    sandbox: d.sandbox ?? null,
    purchase_date,
    last_renewal_date,
    renewal_date,
    expiration_date: d.expirationDate ?? null,
    renewal_intent: d.renewalIntent ?? null,
    renewal_intent_change_date: d.renewalIntentChangeDate ?? null,
    cancelation_reason,
    is_pending: d.isPending ?? null,
    is_acknowledged: d.isAcknowledged ?? null,
    is_consumed: d.isConsumed ?? null,
    is_billing_retry_period: d.isBillingRetryPeriod ?? null,
    is_trial_period: d.isTrialPeriod ?? null,
    is_intro_period: d.isIntroPeriod ?? null,
    is_expired: d.isExpired ?? null,
    grace_period_expiration_date: d.gracePeriodExpirationDate ?? null,
    revocation_date: d.revocationDate ?? null,
    revocation_type: d.revocationType ?? null,
    refunded_share: d.refundedShare ?? null,
    is_upgraded,
    snapshot_is_upgraded: is_upgraded,
    snapshot_cancelation_reason: cancelation_reason,
    price_consent_status: d.priceConsentStatus ?? null,
    discount_id: d.discountId ?? null,
    offer_type: d.offerType ?? null,
    offer_discount_type: d.offerDiscountType ?? null,
    offer_period: d.offerPeriod ?? null,
    ownership_type: d.ownershipType ?? null,
    quantity: d.quantity ?? null,
    amount_usd: d.amountUSD ?? null,
    amount_micros: d.amountMicros ?? null,
    currency: d.currency ?? null,
    occurred_at: transactionDate({ last_renewal_date, renewal_date, purchase_date }, version.version_time),
    first_event_at: version.version_time,
    version_time: version.version_time,
    version_id: version.version_id,
    snapshot_digest: null,
    state_event_id: version.version_id,
    state_source: event.source ?? null,
    state_received_at: event.receivedAt ?? null,
  };
  row.snapshot_digest = snapshotDigest(row);
  return row;
}

/** What deciding a replacement reads of the stored transactions of a receipt. */
export type ReplacementCandidate = Pick<
  TransactionRow,
  | 'app_id'
  | 'transaction_id'
  | 'receipt_id'
  | 'purchase_id'
  | 'product_id'
  | 'occurred_at'
  | 'version_time'
  | 'expiration_date'
  | 'revocation_date'
  | 'is_pending'
  | 'is_expired'
  | 'is_upgraded'
  | 'cancelation_reason'
  | 'snapshot_is_upgraded'
  | 'snapshot_cancelation_reason'
>;
export type ShownReplacement = Pick<TransactionRow, 'app_id' | 'transaction_id' | 'receipt_id' | 'is_upgraded' | 'cancelation_reason'>;

/**
 * The rows of `candidates` (every transaction of some receipts) whose shown isUpgraded and
 * cancelationReason must change: a transaction another one replaced (rule 2 of docs/api.md,
 * `replacements`) shows `isUpgraded: true` and `cancelationReason: System.Replaced`; any other shows
 * what its snapshot says. A function of the stored rows alone, so any order of events gives the same.
 */
export function replacementFlags(candidates: readonly ReplacementCandidate[]): ShownReplacement[] {
  const facts = candidates.map((r) => ({
    transactionId: r.transaction_id,
    receiptId: `${r.app_id}\u0000${r.receipt_id}`,
    purchaseId: r.purchase_id,
    productId: r.product_id,
    transactionDate: r.occurred_at,
    snapshotTime: r.version_time,
    expirationDate: r.expiration_date,
    gracePeriodExpirationDate: null,
    revocationDate: r.revocation_date,
    isPending: r.is_pending,
    isUpgraded: r.snapshot_is_upgraded,
    isExpired: r.is_expired,
    isBillingRetryPeriod: null,
    cancelationReason: r.snapshot_cancelation_reason,
    lastRenewalDate: null,
    renewalIntent: null,
  }));
  const replaced = replacements(facts);
  const changes: ShownReplacement[] = [];
  candidates.forEach((r, i) => {
    const shown = replaced.has(facts[i])
      ? { is_upgraded: true, cancelation_reason: 'System.Replaced' }
      : { is_upgraded: r.snapshot_is_upgraded, cancelation_reason: r.snapshot_cancelation_reason };
    if (shown.is_upgraded !== r.is_upgraded || shown.cancelation_reason !== r.cancelation_reason) {
      changes.push({ app_id: r.app_id, transaction_id: r.transaction_id, receipt_id: r.receipt_id, ...shown });
    }
  });
  return changes;
}
