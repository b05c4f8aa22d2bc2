// One reconciliation pass of one application (docs/operations.md, "Reconciliation"): the selection
// as the import runner's source, each subscription asked through the import's own store requests
// and mappings, only what differs from the read models published, through the import's sink,
// journal, retries and RetryGate.
import type { androidpublisher_v3 } from '@googleapis/androidpublisher';
import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import type { EventSink } from '../cli/event-sink.js';
import type { Progress } from '../common/progress.js';
import type { ReconcileSettings } from '../config/app-config.js';
import { appleStatusEvents, appleTransactionEvents } from '../import/apple/apple-transaction-import.js';
import { googleVoidedImportEvents, importGooglePurchase, type StoredOrder } from '../import/google/google-import.js';
import { listVoidedPurchases, storedOrder, VOIDED_RETENTION_MS } from '../import/google/google-voided.js';
import { ImportJournal } from '../import/import-journal.js';
import {
  BARRIER,
  LineError,
  runImport,
  type ImportEvent,
  type ImportSummary,
  type LineResult,
  type SourceBarrier,
  type SourceLine,
} from '../import/import-runner.js';
import { decodeEvent } from '../events/decode-event.js';
import { transactionRow } from '../projection/project-events.js';
import type { RetryPolicy } from '../import/store-retry.js';
import { describeDrift, DRIFT_KINDS, driftOf, kindsOf, type Drift, type DriftKind, type StoredRow, type TransactionDrift } from './drift.js';
import type { ReconcileStores } from './reconcile-stores.js';
import { reconcileSql } from './reconcile.sql.js';
import { SUSPECT_PHASES, suspicion, type SubscriptionHead, type Suspicion } from './suspicion.js';

export type ReconcileMode = 'suspect' | 'all';
/** Why an item is asked: a suspicion, every subscription (--all), or a voided purchase Google lists. */
export type AskReason = Suspicion | 'all' | 'voided';

/** A subscription to ask about (with its product when it is a one-time purchase left pending: Google asks by product), or a void Google lists. */
type Item =
  { t: 'sub'; receiptId: string; platform: string; reason: AskReason; productId?: string } | { t: 'void'; v: androidpublisher_v3.Schema$VoidedPurchase };

export type ReconcileOptions = {
  appId: string;
  mode: ReconcileMode;
  db: DataSource;
  stores: ReconcileStores;
  policy: Pick<ReconcileSettings, 'overdueMarginMs' | 'checkEveryMs' | 'sampleSize'>;
  concurrency: number;
  maxFutureSkewMs: number;
  /** Unset with dryRun. */
  sink?: EventSink;
  /** Print what differs instead of publishing; nothing is recorded. */
  dryRun?: boolean;
  /** Where --dry-run's differences go (stdout). */
  out: (text: string) => void;
  /** Line messages, a line per healed subscription, the summary (stderr, or the service's log). */
  log: (text: string) => void;
  /** A subscription healed (or, in a dry run, that would be): for the metrics. */
  onDrift?: (kind: DriftKind) => void;
  progress?: Progress;
  signal?: AbortSignal;
  retry?: Partial<RetryPolicy>;
  now?: () => number;
  /** Rows of the selection read at once. */
  pageSize?: number;
};

export type ReconcileSummary = ImportSummary & {
  runId?: string;
  resumed: boolean;
  asked: Record<AskReason, number>;
  /** Subscriptions whose stored state differed from the store's, by kind (a subscription may count under several). */
  drift: Record<DriftKind, number>;
  healed: number;
};

/** The latest row of every subscription of the app on `platforms`, a page at a time, in receipt order. */
async function* subscriptionHeads(db: DataSource, appId: string, platforms: string[], pageSize: number, after = ''): AsyncGenerator<SubscriptionHead> {
  for (;;) {
    const rows = (await db.query(reconcileSql.subscriptionPage, [appId, after, platforms, pageSize])) as SubscriptionHead[];
    for (const r of rows) yield r;
    if (rows.length < pageSize) return;
    after = rows[rows.length - 1].receiptId;
  }
}

export async function reconcilePass(o: ReconcileOptions): Promise<ReconcileSummary> {
  const { appId, db, stores } = o;
  const now = (o.now ?? Date.now)();
  // A store's name is the platform of its rows.
  const platforms = Object.keys(stores);
  const pageSize = o.pageSize ?? 500;
  const asked = { renewal_overdue: 0, retry_overdue: 0, pending_overdue: 0, sample: 0, all: 0, voided: 0 } satisfies Record<AskReason, number>;
  const drift = Object.fromEntries(DRIFT_KINDS.map((k) => [k, 0])) as Record<DriftKind, number>;
  // A subscription two items of the pass heal (its state, then a void) counts once, and each kind once.
  const healedReceipts = new Set<string>();
  const countedKinds = new Set<string>();

  // The rotating sample starts after the last receipt the last finished pass sampled; this pass's reach is recorded when it finishes.
  const [cursor] = (await db.query(reconcileSql.sampleCursor, [appId])) as { sample_after: string | null }[];
  const sampleFrom = cursor?.sample_after ?? '';
  let sampleReached: string | undefined;

  let line = 0;
  const numbered = (item: Item): SourceLine => {
    const text = JSON.stringify(item);
    return { line: ++line, bytes: Buffer.byteLength(text), text };
  };
  const heads = () => subscriptionHeads(db, appId, platforms, pageSize);
  const sub = (h: SubscriptionHead, reason: AskReason): SourceLine =>
    numbered({
      t: 'sub',
      receiptId: h.receiptId,
      platform: h.platform,
      reason,
      // Neither an expiration nor a renewal intent: a one-time product (products.get needs its id), not a subscription.
      ...(h.platform === 'google' && h.expirationDate === null && h.renewalIntent === null ? { productId: h.productId.slice('google:'.length) } : {}),
    });
  // Phases end at a barrier: what one phase published is in `published` before the next compares with it.
  async function* items(): AsyncGenerator<SourceLine | SourceBarrier> {
    // Refunds Google lists (it keeps 30 days), by order, before anything is asked: a Google answer
    // takes in its order's (driftOf), so an order that missed its expiry and its refund heals in one event.
    if (stores.google) {
      const since = now - VOIDED_RETENTION_MS + 60_000;
      for await (const v of listVoidedPurchases(stores.google.api, stores.google.packageName, since, o.retry, o.signal)) {
        if (!v.orderId) continue;
        voids.set(
          v.orderId,
          [...(voids.get(v.orderId) ?? []), v].sort((a, b) => Number(a.voidedTimeMillis) - Number(b.voidedTimeMillis)),
        );
      }
    }
    if (o.mode === 'all') {
      for await (const h of heads()) yield sub(h, 'all');
    } else {
      for (const phase of SUSPECT_PHASES.slice(0, 2)) {
        for await (const h of heads()) {
          const why = suspicion(h, now, o.policy);
          if (why && phase.includes(why)) yield sub(h, why);
        }
      }
    }
    yield BARRIER;
    // The voids no subscription's answer took in: a void the read models do not show yet is a missed refund.
    for (const list of voids.values()) for (const v of list) yield numbered({ t: 'void', v });
    yield BARRIER;
    if (o.mode === 'suspect') {
      // On from where the last pass left off, wrapping around: what keeps failing cannot hold the sample's places.
      let sampled = 0;
      for await (const h of rotated(sampleFrom)) {
        if (sampled >= o.policy.sampleSize) break;
        if (suspicion(h, now, o.policy) !== 'sample') continue;
        sampled++;
        sampleReached = h.receiptId;
        yield sub(h, 'sample');
      }
    }
  }
  /** Every subscription head once: those after `from`, then from the first up to `from`. */
  async function* rotated(from: string): AsyncGenerator<SubscriptionHead> {
    yield* subscriptionHeads(db, appId, platforms, pageSize, from);
    if (from === '') return;
    for await (const h of heads()) {
      if (h.receiptId > from) return;
      yield h;
    }
  }

  // The voids Google lists, by order, in time order: memory bounded by the refunds of 30 days, not the subscriptions.
  const voids = new Map<string, androidpublisher_v3.Schema$VoidedPurchase[]>();
  // Orders this pass revoked or healed: a void adds to the newest of them (googleVoidedImportEvents).
  const voided = new Map<string, StoredOrder>();
  // The newest snapshot this pass published of each transaction: the read models follow the log
  // asynchronously, so a later item compares with these (a refund healed, then an expiry, keeps the refund).
  const published = new Map<string, StoredRow>();
  const remember = (events: readonly ImportEvent[]) => {
    for (const e of events) {
      const decoded = e.type === 'transaction.updated' ? decodeEvent(JSON.stringify(e), { maxFutureSkewMs: o.maxFutureSkewMs }) : undefined;
      if (!decoded?.ok || decoded.event.type !== 'transaction.updated') continue;
      const row = transactionRow(appId, decoded.event.data, { version_time: decoded.event.time, version_id: decoded.event.id });
      if ((published.get(row.transaction_id)?.version_time ?? '') >= row.version_time) continue;
      published.set(row.transaction_id, row);
      const order = row.platform === 'google' ? row.transaction_id.slice('google:'.length) : undefined;
      const versionTime = new Date(decoded.event.time);
      if (order && !((voided.get(order)?.versionTime ?? new Date(0)) >= versionTime)) voided.set(order, { snapshot: e.data, versionTime });
    }
  };
  /** The store's answer against the stored rows (or what this pass published since, if newer). */
  const compare = async (answer: readonly ImportEvent[]) => {
    const ids = [...new Set(answer.filter((e) => e.type === 'transaction.updated').map((e) => String(e.data.transactionId)))];
    const rows = ids.length === 0 ? [] : ((await db.query(reconcileSql.storedRows, [appId, ids])) as StoredRow[]);
    const stored = new Map(rows.map((r) => [r.transaction_id, r]));
    for (const id of ids) {
      const mine = published.get(id);
      if (mine && mine.version_time > (stored.get(id)?.version_time ?? '')) stored.set(id, mine);
    }
    return driftOf(appId, answer, stored, o.maxFutureSkewMs, voids);
  };
  /** What differs between the store's answer about `item` and the read models. */
  const ask = async (item: Item): Promise<Drift | { skip: string }> => {
    if (item.t === 'void') {
      const result = googleVoidedImportEvents(appId, item.v, await storedOrder(db, appId, item.v.orderId), voided);
      // Voids the read models show already (most of them) or cannot apply are no drift: nothing to say.
      return 'skip' in result ? { transactions: [], events: [] } : compare(result.events);
    }
    if (item.platform === 'apple' && stores.apple) {
      const { client, verifier } = stores.apple;
      const id = item.receiptId.slice('apple:'.length);
      if (!/^\d{1,30}$/.test(id)) throw new LineError(`${item.receiptId} names no App Store transaction id`);
      // The statuses first (one call); the whole history, for renewals and refunds the statuses do not show, only when they disagree.
      const status = await appleStatusEvents(appId, client, verifier, id);
      if ('skip' in status) return status;
      const first = await compare(status.events);
      if (first.transactions.length === 0) return first;
      const history = await appleTransactionEvents(appId, client, verifier, { transactionId: id }, status.statuses);
      return 'skip' in history ? history : compare(history.events);
    }
    if (item.platform === 'google' && stores.google) {
      const answer = await importGooglePurchase(stores.google.api, appId, stores.google.packageName, {
        purchaseToken: item.receiptId.slice('google:'.length),
        productId: item.productId,
      });
      return 'skip' in answer ? answer : compare(answer.events);
    }
    throw new LineError(`${item.receiptId}: no store API configured for platform ${item.platform}`);
  };

  const fetchEvents = async (item: Item): Promise<LineResult> => {
    const found = await ask(item);
    asked[item.t === 'sub' ? item.reason : 'voided']++;
    if ('skip' in found) return found;
    remember(found.events);
    const byReceipt = new Map<string, TransactionDrift[]>();
    for (const d of found.transactions) byReceipt.set(d.receiptId, [...(byReceipt.get(d.receiptId) ?? []), d]);
    for (const [receiptId, drifts] of byReceipt) {
      const kinds = kindsOf(drifts);
      healedReceipts.add(receiptId);
      for (const k of kinds) {
        if (countedKinds.has(`${k} ${receiptId}`)) continue;
        countedKinds.add(`${k} ${receiptId}`);
        drift[k]++;
        o.onDrift?.(k);
      }
      if (o.dryRun) o.out(describeDrift(receiptId, drifts) + '\n');
      else o.log(`healed ${receiptId}: ${kinds.join(', ')} (${drifts.map((d) => d.transactionId).join(', ')})\n`);
    }
    return { events: found.events };
  };

  let runId: string | undefined;
  let resumed = false;
  let journal: ImportJournal | undefined;
  if (!o.dryRun) {
    let [open] = (await db.query(reconcileSql.openRun, [appId, o.mode])) as { run_id: string }[];
    resumed = open !== undefined;
    if (!open) {
      await db.query(reconcileSql.startRun, [appId, randomUUID(), o.mode]);
      [open] = (await db.query(reconcileSql.openRun, [appId, o.mode])) as { run_id: string }[];
    }
    runId = open.run_id;
    journal = new ImportJournal(db, appId, 'reconcile', runId);
  }
  const summary = await runImport<Item>({
    appId,
    kind: 'reconcile',
    lines: items(),
    parseLine: (text) => JSON.parse(text) as Item,
    keyOf: (item) => (item.t === 'sub' ? `sub:${item.receiptId}` : `void:${item.v.orderId ?? ''}@${item.v.voidedTimeMillis ?? ''}`),
    fetchEvents,
    concurrency: o.concurrency,
    sink: o.sink,
    journal,
    dryRun: o.dryRun,
    // A dry run prints the differences (fetchEvents), not the events.
    out: () => undefined,
    log: o.log,
    progress: o.progress,
    retry: o.retry,
    signal: o.signal,
    maxFutureSkewMs: o.maxFutureSkewMs,
  });
  if (runId && !summary.interrupted && !summary.fatal) await db.query(reconcileSql.finishRun, [appId, runId, sampleReached ?? (sampleFrom || null)]);
  return { ...summary, runId, resumed, asked, drift, healed: healedReceipts.size };
}

export function formatReconcileSummary(appId: string, mode: ReconcileMode, s: ReconcileSummary, dryRun = false): string {
  const asked = Object.entries(s.asked)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
  const kinds = Object.entries(s.drift)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
  const lines = [
    `reconcile ${appId} (${mode}${s.resumed ? ', resumed' : ''}): asked ${Object.values(s.asked).reduce((a, b) => a + b, 0)} (${asked || 'none'}), ` +
      `${dryRun ? 'would heal' : 'healed'} ${s.healed} subscription(s) (${kinds || 'no drift'}), ${dryRun ? 'would publish' : 'published'} ${s.events} event(s), ` +
      `unchanged ${s.unchanged} (done by the interrupted pass), skipped ${s.skipped.length}, failed ${s.failed.length}`,
  ];
  if (s.fatal) lines.push(`stopped: ${s.fatal}`);
  else if (s.interrupted) lines.push('interrupted: run the same command again to continue the pass where it stopped');
  return lines.join('\n') + '\n';
}
