// What the store says against what the read models show, per transaction (docs/operations.md,
// "Reconciliation"). Pure: the pass fetches the store's answer (through the store's one mapping)
// and the stored rows; this decides which snapshots differ, what to publish and what kind of drift
// it was.
import { decodeEvent } from '../events/decode-event.js';
import { fromSource, SOURCES } from '../events/provenance.js';
import { keepingRevocation } from '../store-notifications/stored-transaction.js';
import { googleVoidedImportEvents } from '../import/google/google-import.js';
import type { androidpublisher_v3 } from '@googleapis/androidpublisher';
import { SNAPSHOT_CONTRACT, snapshotDigest, transactionRow, type SnapshotFields, type TransactionRow } from '../projection/project-events.js';
import type { ImportEvent } from '../import/import-runner.js';

/** A stored row in the form snapshotDigest reads (times as the decoder writes them), with its version time. */
export type StoredRow = SnapshotFields & { transaction_id: string; version_time: string };

export type DriftKind = 'missed_renewal' | 'missed_expiry' | 'missed_refund' | 'wrong_intent' | 'other';
export const DRIFT_KINDS: readonly DriftKind[] = ['missed_renewal', 'missed_expiry', 'missed_refund', 'wrong_intent', 'other'];

type Field = keyof SnapshotFields;
/** A field that differs: the row's column, what is stored (null: nothing), what the store says. */
export type FieldDiff = { field: Field; stored: unknown; store: unknown };
export type TransactionDrift = { transactionId: string; receiptId: string; kind: DriftKind; created: boolean; fields: FieldDiff[] };
export type Drift = { transactions: TransactionDrift[]; events: ImportEvent[] };

/**
 * The facts of a subscription's current state: for its latest transaction the store's answer says
 * them whole, so a fact it leaves out is no longer so (billing retry over, grace gone). Every other
 * field, and every field of older transactions (whose history Apple sends without renewal info),
 * only changes when the store states a value: what it leaves out stays as stored (a renewal-intent
 * change date, a producer's amountUSD).
 */
const STATE_FIELDS: ReadonlySet<Field> = new Set<Field>([
  'expiration_date',
  'renewal_intent',
  'is_billing_retry_period',
  'grace_period_expiration_date',
  'is_expired',
  'is_pending',
  'revocation_date',
  'revocation_type',
  'refunded_share',
]);

const text = (v: unknown) => (v === null || v === undefined ? null : String(v));
const NUMERIC: ReadonlySet<Field> = new Set<Field>(['quantity', 'amount_usd', 'amount_micros', 'refunded_share']);

/** The id of a reconciliation event: the transaction and the content it says, so the same answer published twice is one event. */
export const reconcileEventId = (transactionId: string, content: SnapshotFields) => `reconcile:${transactionId}:${snapshotDigest(content).slice(0, 32)}`;

/**
 * Which of `storeEvents` (the store's mapping of what it answers now) say something the stored rows
 * do not, and the events that heal them: each a transaction.updated of the merged snapshot, with a
 * deterministic id (reconcileEventId), source SOURCES.reconciliation, and the store's time: a
 * stored snapshot as new as the answer or newer is left alone. receipt.linked events are left out: reconciliation heals states, it does
 * not move receipts between customers.
 */
export function driftOf(
  appId: string,
  storeEvents: readonly ImportEvent[],
  stored: ReadonlyMap<string, StoredRow>,
  maxFutureSkewMs: number,
  voids: ReadonlyMap<string, readonly androidpublisher_v3.Schema$VoidedPurchase[]> = new Map(),
): Drift {
  const decoded = storeEvents.flatMap((e) => {
    if (e.type !== 'transaction.updated') return [];
    const said = e.data.platform === 'google' ? withRefunds(appId, e, stored.get(String(e.data.transactionId)), voids) : e;
    const d = decodeEvent(JSON.stringify(said), { maxFutureSkewMs });
    return d.ok && d.event.type === 'transaction.updated' ? [{ raw: e, event: d.event }] : [];
  });
  // The current transaction of each subscription, whose state the answer gives whole: one neither
  // revoked nor replaced by an upgrade (whose expiry can lie beyond the new one's), then the latest.
  const latest = new Map<string, { id: string; end: string }>();
  for (const { event } of decoded) {
    const current = event.data.revocationDate === undefined && event.data.isUpgraded !== true ? 1 : 0;
    const end = `${current}|${event.data.expirationDate ?? ''}|${event.data.lastRenewalDate ?? event.data.purchaseDate ?? ''}`;
    const known = latest.get(event.data.receiptId);
    if (!known || end > known.end) latest.set(event.data.receiptId, { id: event.data.transactionId, end });
  }
  const transactions: TransactionDrift[] = [];
  const events: ImportEvent[] = [];
  for (const { raw, event } of decoded) {
    const id = event.data.transactionId;
    const store = transactionRow(appId, event.data, { version_time: event.time, version_id: event.id });
    const before = stored.get(id);
    // The stored snapshot is as new as the store's answer, or newer (a notification that came while
    // the store was asked): it stands, as the ordering rules say; a later pass asks again.
    if (before && before.version_time >= event.time) continue;
    const isLatest = latest.get(event.data.receiptId)?.id === id;
    const merged = before ? merge(before, store, isLatest) : pick(store);
    const fields = diff(before, merged);
    if (fields.length === 0) continue;
    const created = before === undefined;
    transactions.push({ transactionId: id, receiptId: event.data.receiptId, kind: kindOf(fields, created), created, fields });
    const data = { ...contractData(merged), ...(event.data.applicationUsername ? { applicationUsername: event.data.applicationUsername } : {}) };
    events.push(
      ...fromSource(
        [{ ...raw, id: reconcileEventId(id, merged), data: { ...data, transactionId: id } as unknown as ImportEvent['data'] }],
        SOURCES.reconciliation,
      ),
    );
  }
  return { transactions, events };
}

/**
 * Google's state of an order with the refunds it leaves out: its subscription state never shows one
 * (Apple's transaction does, a reversal included), so a stored revocation stays (keepingRevocation)
 * and the voids Google lists that the order does not show yet are applied in time order through the
 * voided purchases' own mapping: an order that missed its expiry and its refund heals in one event.
 */
function withRefunds(
  appId: string,
  e: ImportEvent,
  before: StoredRow | undefined,
  voids: ReadonlyMap<string, readonly androidpublisher_v3.Schema$VoidedPurchase[]>,
): ImportEvent {
  let data = before ? keepingRevocation(e.data, contractData(before)) : e.data;
  let time = String(e.time);
  for (const v of voids.get(String(e.data.transactionId).slice('google:'.length)) ?? []) {
    const voided = googleVoidedImportEvents(appId, v, { snapshot: data, versionTime: new Date(time) });
    const revoked = 'events' in voided ? voided.events.find((x) => x.type === 'transaction.updated') : undefined;
    if (revoked) [data, time] = [revoked.data, String(revoked.time)];
  }
  return { ...e, data: data as ImportEvent['data'], time };
}

function pick(row: TransactionRow): SnapshotFields {
  return Object.fromEntries(SNAPSHOT_CONTRACT.map(([f]) => [f, row[f]])) as SnapshotFields;
}

function merge(before: StoredRow, store: TransactionRow, isLatest: boolean): SnapshotFields {
  return Object.fromEntries(
    SNAPSHOT_CONTRACT.map(([f]) => [f, (isLatest && STATE_FIELDS.has(f)) || (store[f] !== null && store[f] !== undefined) ? store[f] : before[f]]),
  ) as SnapshotFields;
}

function diff(before: StoredRow | undefined, after: SnapshotFields): FieldDiff[] {
  return SNAPSHOT_CONTRACT.flatMap(([f]) => {
    const was = before?.[f] ?? null;
    const now = after[f] ?? null;
    const same = NUMERIC.has(f) && was !== null && now !== null ? Number(was) === Number(now) : text(was) === text(now);
    return same ? [] : [{ field: f, stored: was, store: now }];
  });
}

/** The kind of one transaction's drift, by the first rule that holds. */
export function kindOf(fields: readonly FieldDiff[], created: boolean): DriftKind {
  const changed = (f: Field) => fields.find((d) => d.field === f);
  if (changed('revocation_date')?.store) return 'missed_refund';
  if (created) return 'missed_renewal';
  if (changed('is_expired')?.store === true) return 'missed_expiry';
  if (changed('renewal_intent')) return 'wrong_intent';
  const expiration = changed('expiration_date');
  if (expiration && expiration.stored !== null && expiration.store !== null && String(expiration.store) > String(expiration.stored)) return 'missed_renewal';
  return 'other';
}

function contractData(row: SnapshotFields): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [f, name] of SNAPSHOT_CONTRACT) {
    const v = row[f];
    if (v === null || v === undefined) continue;
    out[name] = NUMERIC.has(f) ? Number(v) : v;
  }
  return out;
}

/** The kinds of a subscription's drift, each once, in DRIFT_KINDS' order. */
export const kindsOf = (drifts: readonly TransactionDrift[]): DriftKind[] => DRIFT_KINDS.filter((k) => drifts.some((d) => d.kind === k));

/** One line of `--dry-run` (and of the log): a subscription, its drift kinds and the fields that differ, per transaction. */
export function describeDrift(receiptId: string, drifts: readonly TransactionDrift[]): string {
  const parts = drifts.map(
    (d) =>
      `${d.transactionId}${d.created ? ' (not stored)' : ''} ${d.kind}: ${d.fields.map((f) => `${f.field} ${JSON.stringify(f.stored)} -> ${JSON.stringify(f.store)}`).join(', ')}`,
  );
  return `${receiptId} ${kindsOf(drifts).join(',')}: ${parts.join('; ')}`;
}
