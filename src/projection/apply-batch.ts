import type { DataSource, EntityManager } from 'typeorm';
import { LIVE_PROJECTION_LOCK } from '../database/advisory-locks.js';
import { decodeEvent, RejectCode, type Decoded } from '../events/decode-event.js';
import { messageSha1, type Batch, type BatchOutcome, type DeadLetter } from '../events/log-batch.js';
import type { PurchaseEvent } from '../events/purchase-event.js';
import { sql, type CountStatements } from './apply-batch.sql.js';
import { lifecycleOf, refreshSummaries, type CustomerKey, type ExtendedSummary } from './customer-summaries.js';
import { grantsDigest, type EntitlementTransaction } from '../customers/customer-entitlements.js';
import { extendSummary, type CustomerFacts } from '../customers/customer-summary.js';
import { actionForReject } from './reject-policy.js';
import { customerCellDeltas, type CustomerChange } from './customer-cells.js';
import { dayCountDeltas, filterCellOf, filterCountDeltas, sumDayDeltas, utcDay, type DayDelta, type FilterCell, type FilterCountDelta } from './day-counts.js';
import { linkWins, mergeTransaction, projectEvents, snapshotWins, type ReceiptRow, type RowChanges, type TransactionRow } from './project-events.js';
import { stageEvents, type StagedEvent } from './bulk/stage-events.js';
import { applyReplacements } from './replacements.js';
import { applyErasures, erasuresFor } from './erasures.js';
import { openSealedMessages } from '../customers/crypto-shredding/sealed-username.js';
import { forgetKeysErased } from '../customers/crypto-shredding/forget-keys.js';
import { forgetAccountTokensErased } from '../customers/account-tokens/account-tokens.js';
import { revenueMonthsSql } from '../revenue/revenue-months.sql.js';
import { recordFeedDeletions } from '../change-feed/feed-deletions.sql.js';
import { forgetDeliveries } from '../webhooks/forget-deliveries.js';

export type ApplyOptions = {
  /** Read-model schema to write into: the live `read_model`, or a generation being rebuilt. */
  schema?: string;
  /**
   * First offset still in the log (Kafka retention). A batch starting there is no gap even when the
   * stored offset is lower: the events in between no longer exist anywhere.
   */
  logStartOffset?: string;
  /**
   * Hold the live-projection lock (shared) for the batch: a rebuild switching generations takes it
   * exclusively to pause live batches. Defaults to true when writing the live `read_model`.
   */
  liveLock?: boolean;
  /** Runs inside the transaction after the rows are written; a throw rolls the batch back. */
  beforeCommit?: (deadLetters: readonly DeadLetter[]) => Promise<void>;
  /** How far an event's `time` may be ahead of its log timestamp before it is dead-lettered. */
  maxFutureSkewMs?: number;
  /**
   * Messages to dead-letter without projecting (offset -> PostgreSQL's error): the ones the
   * projector isolated by splitting a batch that PostgreSQL refused for its content.
   */
  refused?: ReadonlyMap<string, string>;
  /**
   * Rebuild's bulk path: append the decoded events to the generation's staging table instead of
   * projecting them; a later fold (foldStaged) turns the staged log into rows. Offsets, gaps and
   * dead letters are handled as on the live path.
   */
  stage?: boolean;
  /**
   * Aborted when the consumer stops and cannot wait for the batch any longer: the batch's connection
   * is terminated and its transaction rolls back.
   */
  signal?: AbortSignal;
};

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
export const LIVE_SCHEMA = 'read_model';

/**
 * Projects one batch of consecutive messages of one topic partition in a single transaction and
 * records the next offset next to the rows. Safe to call again with the same or overlapping
 * messages: what is below the stored offset is skipped, and an event applied again changes nothing. A batch
 * that starts beyond the stored offset would leave a hole, so it is refused ('gap') and the
 * caller must seek back to `storedOffset`.
 */
export async function applyBatch(db: DataSource, batch: Batch, options: ApplyOptions = {}): Promise<BatchOutcome> {
  const schema = options.schema ?? LIVE_SCHEMA;
  if (!SCHEMA_NAME.test(schema)) throw new Error(`invalid schema name ${schema}`);
  assertAscending(batch);
  const q = sql(schema);
  const liveLock = options.liveLock ?? schema === LIVE_SCHEMA;
  const run = async (m: EntityManager): Promise<BatchOutcome> => {
    // The offsets of record commit with the rows, so a commit lost in a PostgreSQL crash is simply
    // re-projected from the log on restart: durability of each batch's commit is not needed.
    // The API's statement_timeout does not bound a batch: a slow batch is retried whole anyway.
    // Every statement of a batch looks up at most a few thousand keys: index lookups whatever the
    // table statistics say. Left to the planner, a table never analysed (autovacuum off) or a batch
    // touching many pages gets a hash join over a full scan, whose cost grows with the table, and
    // past jit_above_cost a JIT compilation per statement (bench/notes.md, projection at 1M).
    await m.query('SET LOCAL synchronous_commit = off; SET LOCAL statement_timeout = 0; SET LOCAL enable_seqscan = off; SET LOCAL jit = off');
    // Before any table name is resolved: after a generation switch, names bind to the new schema.
    if (liveLock) await m.query('SELECT pg_advisory_xact_lock_shared($1)', [LIVE_PROJECTION_LOCK]);
    const [{ next_offset: stored }] = (await m.query(q.lockOffset, [batch.topic, batch.partition])) as { next_offset: string }[];
    const storedOffset = BigInt(stored);
    const fresh = batch.messages.filter((msg) => BigInt(msg.offset) >= storedOffset);
    if (fresh.length === 0) {
      return { kind: 'applied', nextOffset: stored, applied: [], alreadyProjected: batch.messages.length, deadLetters: [] };
    }
    const first = BigInt(fresh[0].offset);
    const logStart = options.logStartOffset === undefined ? storedOffset : BigInt(options.logStartOffset);
    if (first > storedOffset && first > logStart) return { kind: 'gap', storedOffset: stored };

    const events: PurchaseEvent[] = [];
    const staged: StagedEvent[] = [];
    const deadLetters: DeadLetter[] = [];
    // Sealed usernames opened (or erased:<hash> once their key is gone); dead letters and the stored
    // offset's digest keep the message as the log holds it.
    const readable = await openSealedMessages(m, fresh);
    for (const [i, msg] of fresh.entries()) {
      const refusal = options.refused?.get(msg.offset);
      const decoded: Decoded =
        refusal !== undefined
          ? { ok: false, code: RejectCode.ProjectionFailed, reason: `PostgreSQL refused the event: ${refusal}` }
          : decodeEvent(readable[i].value, {
              receivedAt: msg.timestamp === undefined ? undefined : Number(msg.timestamp),
              maxFutureSkewMs: options.maxFutureSkewMs,
            });
      if (decoded.ok) {
        if (options.stage) staged.push({ event: decoded.event, offset: msg.offset });
        else events.push(decoded.event);
      } else if (actionForReject(decoded.code) === 'dead-letter')
        deadLetters.push({
          topic: batch.topic,
          partition: batch.partition,
          offset: msg.offset,
          key: msg.key === null ? null : Buffer.isBuffer(msg.key) ? msg.key : Buffer.from(msg.key, 'utf8'),
          value: msg.value ?? Buffer.alloc(0),
          code: decoded.code,
          reason: storableText(decoded.reason),
        });
    }

    let applied: PurchaseEvent[];
    if (options.stage) {
      // Staged events are folded over the whole log at once (foldStaged).
      await stageEvents(m, schema, batch.partition, staged);
      applied = staged.map((s) => s.event);
    } else {
      const apps = new Map<string, boolean>();
      for (const e of events) apps.set(e.appId, apps.get(e.appId) === true || e.type === 'customer.erased');
      if (apps.size > 0) await m.query(q.lockApps, [[...apps.keys()], [...apps.values()]]);
      // Erasures (docs/privacy.md): events naming an erased customer at or before the erasure name no one.
      const erased = await erasuresFor(m, schema, events);
      const counts = await writeChanges(m, schema, projectEvents(events, erased.isErased));
      const erasure = await applyErasures(m, schema, erased.erasures);
      await forgetKeysErased(m, erased.erasures);
      await forgetAccountTokensErased(m, erased.erasures);
      if (schema === LIVE_SCHEMA) {
        await recordFeedDeletions(m, 'customers', erasure.deleted);
        await forgetDeliveries(m, erasure.deleted);
      }
      await writeCounts(m, schema, {
        ...counts,
        customerDays: [...counts.customerDays, ...erasure.days],
        customerCells: [...counts.customerCells, ...erasure.cells],
      });
      applied = events;
    }
    if (deadLetters.length > 0) {
      await m.query(q.insertDeadLetters, [
        batch.topic,
        batch.partition,
        deadLetters.map((d) => d.offset),
        deadLetters.map((d) => d.key),
        deadLetters.map((d) => d.value),
        deadLetters.map((d) => d.code),
        deadLetters.map((d) => d.reason),
      ]);
    }
    const last = fresh[fresh.length - 1];
    const nextOffset = (BigInt(last.offset) + 1n).toString();
    await m.query(q.storeOffset, [batch.topic, batch.partition, nextOffset, messageSha1(last.value)]);
    await options.beforeCommit?.(deadLetters);
    return {
      kind: 'applied',
      nextOffset,
      applied,
      alreadyProjected: batch.messages.length - fresh.length,
      deadLetters,
    };
  };
  return db.transaction(async (m) => {
    const release = terminateOnAbort(db, m, options.signal);
    try {
      return await run(m);
    } finally {
      release();
    }
  });
}

/**
 * On `signal`, ends the transaction's connection from another one: a statement waiting on a lock,
 * or a transaction between statements, is not reached by a cancel.
 */
function terminateOnAbort(db: DataSource, m: EntityManager, signal: AbortSignal | undefined): () => void {
  const pid = (m.queryRunner as unknown as { databaseConnection?: { processID?: number } } | undefined)?.databaseConnection?.processID;
  if (!signal || pid === undefined) return () => undefined;
  const terminate = () => void db.query('SELECT pg_terminate_backend($1)', [pid]).catch(() => undefined);
  if (signal.aborted) terminate();
  else signal.addEventListener('abort', terminate, { once: true });
  return () => signal.removeEventListener('abort', terminate);
}

const key2 = (a: string, b: string) => `${a}\u0000${b}`;
/** The list under `key`, created empty on first use. */
function listIn<T>(lists: Map<string, T[]>, key: string): T[] {
  let list = lists.get(key);
  if (list === undefined) lists.set(key, (list = []));
  return list;
}
/** Sorted by a string key computed once per item (the writer sorts every batch's rows this way). */
function sorted<T>(items: T[], key: (t: T) => string): T[] {
  return items
    .map((item) => ({ item, k: key(item) }))
    .sort((x, y) => (x.k < y.k ? -1 : x.k > y.k ? 1 : 0))
    .map((x) => x.item);
}

type StoredTransaction = Pick<
  TransactionRow,
  | 'app_id'
  | 'transaction_id'
  | 'receipt_id'
  | 'version_time'
  | 'version_id'
  | 'first_event_at'
  | 'occurred_at'
  | 'last_renewal_date'
  | 'renewal_date'
  | 'purchase_date'
  | 'snapshot_digest'
  | 'state_event_id'
  | 'state_source'
  | 'state_received_at'
>;
/** The lock read also says where the stored row is counted for the filters. */
type LockedTransaction = StoredTransaction & { cell_product_id: string; cell_platform: string; cell_sandbox: boolean; revenue_cell: string | null };
type StoredReceipt = Pick<ReceiptRow, 'app_id' | 'receipt_id' | 'application_username' | 'explicit' | 'version_time' | 'version_id'>;

/**
 * Writes one batch's row changes, keeping the customer summaries exact, and returns the count
 * changes they make (writeCounts). The rules (mergeTransaction, linkWins, summarizeCustomer) run
 * here in TypeScript; SQL fetches and stores. Lock order is the same in every batch (transaction
 * rows, receipt advisory locks, customer rows, then, after the erasures, the counts), each in one
 * order, so concurrent batches wait for each other instead of deadlocking.
 */
async function writeChanges(m: EntityManager, schema: string, changes: RowChanges): Promise<CountChanges> {
  const q = sql(schema);
  const txCells: Parameters<typeof filterCountDeltas>[0] = [];
  // What the stored rows added to the revenue sums before the batch (JSON), taken off by writeCounts.
  const revenueBefore: string[] = [];
  // Receipts whose owners' summaries can change: each written transaction's receipt, the receipt a
  // moved transaction left, and every receipt the batch links.
  const receiptKeys = new Map<string, { app_id: string; receipt_id: string }>();
  const touchReceipt = (app_id: string, receipt_id: string) => receiptKeys.set(key2(app_id, receipt_id), { app_id, receipt_id });
  // Receipts that only gained new transactions (their owners' summaries can be extended), and
  // receipts whose transactions or owner changed otherwise (their owners' summaries are re-derived).
  const appended = new Map<string, EntitlementTransaction[]>();
  const rewritten = new Set<string>();
  // Whole images of the rows written, so re-deriving a summary reads only what the batch did not write.
  const writes = { byReceipt: new Map<string, TransactionRow[]>(), keys: new Set<string>(), partial: [] as string[] };
  const wrote = (t: TransactionRow) => {
    writes.keys.add(key2(t.app_id, t.transaction_id));
    listIn(writes.byReceipt, key2(t.app_id, t.receipt_id)).push(t);
  };

  if (changes.transactions.length > 0) {
    const txs = sorted(changes.transactions, (t) => key2(t.app_id, t.transaction_id));
    const inserted = (await m.query(q.insertNewTransactions, [JSON.stringify(txs)])) as { app_id: string; transaction_id: string }[];
    const isNew = new Set(inserted.map((r) => key2(r.app_id, r.transaction_id)));
    const existing = txs.filter((t) => !isNew.has(key2(t.app_id, t.transaction_id)));
    const stored = new Map<string, StoredTransaction>();
    const storedCells = new Map<string, FilterCell>();
    if (existing.length > 0) {
      const rows = (await m.query(q.lockTransactions, [existing.map((t) => t.app_id), existing.map((t) => t.transaction_id)])) as LockedTransaction[];
      for (const { cell_product_id, cell_platform, cell_sandbox, revenue_cell, ...r } of rows) {
        const k = key2(r.app_id, r.transaction_id);
        if (revenue_cell !== null) revenueBefore.push(revenue_cell);
        stored.set(k, r);
        storedCells.set(k, { day: utcDay(r.occurred_at), product_id: cell_product_id, platform: cell_platform, sandbox: cell_sandbox });
      }
    }
    // The batch's snapshots of a transaction, in log order: merged into the stored row one by one.
    const stepsOf = (t: TransactionRow) => changes.transactionSteps?.get(key2(t.app_id, t.transaction_id)) ?? [t];
    // Equal versions are decided by content (snapshotWins), so those rows are read whole; rare
    // (a redelivery, or an id reused for other data), hence not part of the lock read above.
    const tied = existing.filter((t) => {
      const before = stored.get(key2(t.app_id, t.transaction_id));
      return before !== undefined && stepsOf(t).some((step) => before.version_time === step.version_time && before.version_id === step.version_id);
    });
    const storedSnapshots = new Map<string, Partial<TransactionRow>>();
    if (tied.length > 0) {
      const rows = (await m.query(q.readSnapshots, [tied.map((t) => t.app_id), tied.map((t) => t.transaction_id)])) as (Partial<TransactionRow> & {
        app_id: string;
        transaction_id: string;
      })[];
      for (const r of rows) storedSnapshots.set(key2(r.app_id, r.transaction_id), r);
    }
    const overwrite: TransactionRow[] = [];
    const redate: StoredTransaction[] = [];
    for (const t of txs) {
      const k = key2(t.app_id, t.transaction_id);
      touchReceipt(t.app_id, t.receipt_id);
      const before = stored.get(k);
      if (!before) {
        txCells.push({ app_id: t.app_id, cell: filterCellOf(t) });
        wrote(t);
        listIn(appended, key2(t.app_id, t.receipt_id)).push(lifecycleOf(t));
        continue;
      }
      // The stored row stands in for every snapshot merged into it so far.
      const known = { ...t, ...before, ...storedSnapshots.get(k) } as TransactionRow;
      const merged = stepsOf(t).reduce(mergeTransaction, known);
      let changed = true;
      const previousCell = storedCells.get(k)!;
      // Only a winning snapshot rewrites the filtered values; otherwise the row keeps them, and at most its date moves.
      let cell = { ...previousCell, day: utcDay(merged.occurred_at) };
      if (snapshotWins(t, known)) {
        overwrite.push(merged);
        wrote(merged);
        cell = filterCellOf(merged);
      } else if (merged.first_event_at !== before.first_event_at) {
        redate.push({ ...before, first_event_at: merged.first_event_at, occurred_at: merged.occurred_at });
        writes.partial.push(t.transaction_id);
      } else changed = false; // a stale snapshot
      if (changed) rewritten.add(key2(t.app_id, t.receipt_id));
      if (before.receipt_id !== merged.receipt_id) {
        touchReceipt(before.app_id, before.receipt_id);
        rewritten.add(key2(before.app_id, before.receipt_id));
      }
      txCells.push({ app_id: t.app_id, cell, previous: previousCell });
    }
    if (overwrite.length > 0) await m.query(q.overwriteTransactions, [JSON.stringify(overwrite)]);
    if (redate.length > 0) {
      await m.query(q.setTransactionDates, [
        redate.map((r) => r.app_id),
        redate.map((r) => r.transaction_id),
        redate.map((r) => r.first_event_at),
        redate.map((r) => r.occurred_at),
      ]);
    }
  }

  const affected = new Map<string, { app_id: string; name: string }>();
  // The touched receipts each affected customer owns, or owned before this batch.
  const ownedTouched = new Map<string, string[]>();
  const affect = (app_id: string, name: string | null, receiptId: string) => {
    if (name === null) return; // a receipt without owner (its customer was erased)
    const k = key2(app_id, name);
    affected.set(k, { app_id, name });
    listIn(ownedTouched, k).push(key2(app_id, receiptId));
  };
  // Receipts whose transactions the batch wrote: where a replacement (rule 2) can start or end.
  const transactionReceipts = [...receiptKeys.values()];
  const links = sorted(changes.receipts, (r) => key2(r.app_id, r.receipt_id));
  for (const r of links) touchReceipt(r.app_id, r.receipt_id);
  // The advisory locks (one per hash bucket of receipts) are taken in order inside SQL; the receipt rows themselves are not locked.
  const touched = [...receiptKeys.values()];
  const touchedArgs = [touched.map((r) => r.app_id), touched.map((r) => r.receipt_id)];
  if (touched.length > 0) await m.query(q.lockReceiptKeys, touchedArgs);
  // Rows another transaction replaced show it (or show their snapshot again); their owners re-derive.
  for (const r of await applyReplacements(
    m,
    schema,
    sorted(transactionReceipts, (k) => key2(k.app_id, k.receipt_id)),
  )) {
    rewritten.add(key2(r.app_id, r.receipt_id));
    if (!writes.keys.has(key2(r.app_id, r.transaction_id))) {
      writes.partial.push(r.transaction_id);
      continue;
    }
    // the batch's image of the row stands in for it: it must show the flags just set
    const images = writes.byReceipt.get(key2(r.app_id, r.receipt_id)) ?? [];
    const i = images.findIndex((t) => t.transaction_id === r.transaction_id);
    if (i >= 0) images[i] = { ...images[i], is_upgraded: r.is_upgraded, cancelation_reason: r.cancelation_reason };
  }
  const createdReceipts = new Set<string>();
  if (links.length > 0) {
    const created = (await m.query(q.insertNewReceipts, [JSON.stringify(links)])) as { app_id: string; receipt_id: string }[];
    for (const r of created) {
      createdReceipts.add(key2(r.app_id, r.receipt_id));
      rewritten.add(key2(r.app_id, r.receipt_id));
    }
  }
  if (touched.length > 0) {
    const rows = (await m.query(q.readReceipts, touchedArgs)) as StoredReceipt[];
    const storedLinks = new Map(rows.map((r) => [key2(r.app_id, r.receipt_id), r]));
    for (const r of rows) affect(r.app_id, r.application_username, r.receipt_id);
    const won = links.filter((r) => {
      const k = key2(r.app_id, r.receipt_id);
      const before = storedLinks.get(k);
      return !createdReceipts.has(k) && before !== undefined && linkWins(r, before);
    });
    for (const r of won) {
      affect(r.app_id, r.application_username, r.receipt_id);
      rewritten.add(key2(r.app_id, r.receipt_id));
    }
    if (won.length > 0) await m.query(q.updateReceipts, [JSON.stringify(won)]);
  }

  const seen = sorted(changes.customers, (c) => key2(c.app_id, c.application_username));
  const customerKeys = new Map(affected);
  for (const c of seen) customerKeys.set(key2(c.app_id, c.application_username), { app_id: c.app_id, name: c.application_username });
  const customers = sorted([...customerKeys.values()], (c) => key2(c.app_id, c.name));
  const customerDays: Parameters<typeof dayCountDeltas>[0] = [];
  const storedFacts = new Map<string, CustomerFacts>();
  const storedDigests = new Map<string, bigint | null>();
  const seenDay = new Map<string, string>();
  const placed = new Map<string, CustomerChange>();
  if (customers.length > 0) {
    // New ones first, then every one locked: a customer another partition's batch created meanwhile
    // is then seen with its committed first_seen_at, never counted as new twice.
    const args = [seen.map((c) => c.app_id), seen.map((c) => c.application_username), seen.map((c) => c.first_seen_at)];
    const inserted = seen.length === 0 ? [] : ((await m.query(q.insertNewCustomers, args)) as { app_id: string; application_username: string }[]);
    const isNew = new Set(inserted.map((r) => key2(r.app_id, r.application_username)));
    const locked = (await m.query(q.lockCustomers, [customers.map((c) => c.app_id), customers.map((c) => c.name)])) as LockedCustomer[];
    const before = new Map(locked.map((r) => [key2(r.app_id, r.application_username), r.first_seen_at]));
    for (const r of locked) {
      storedDigests.set(key2(r.app_id, r.application_username), r.grants_digest === null ? null : BigInt(r.grants_digest));
      storedFacts.set(key2(r.app_id, r.application_username), {
        transactionCount: r.transaction_count,
        lastPurchaseDate: r.last_purchase_date,
        expirationDate: r.expiration_date,
        lastRenewalDate: r.last_renewal_date,
        renewalIntent: r.renewal_intent,
        productId: r.current_product_id,
        graceFrom: r.grace_from,
        billingRetry: r.billing_retry,
      });
    }
    // first_seen_at only ever moves earlier
    const lowered = seen.filter((c) => {
      const k = key2(c.app_id, c.application_username);
      const stored = before.get(k);
      return !isNew.has(k) && stored !== undefined && c.first_seen_at < stored;
    });
    if (lowered.length > 0) {
      await m.query(q.lowerFirstSeen, [lowered.map((c) => c.app_id), lowered.map((c) => c.application_username), lowered.map((c) => c.first_seen_at)]);
    }
    for (const c of seen) {
      const k = key2(c.app_id, c.application_username);
      const stored = before.get(k);
      const previousDay = isNew.has(k) || stored === undefined ? undefined : utcDay(stored);
      const day = utcDay(c.first_seen_at);
      const firstDay = previousDay !== undefined && previousDay < day ? previousDay : day;
      customerDays.push({ app_id: c.app_id, key: k, day: firstDay, previousDay });
      seenDay.set(k, firstDay);
    }
    // Where each is counted before and after the batch (the after facts are set once summaries are stored).
    for (const r of locked) {
      const k = key2(r.app_id, r.application_username);
      const facts = storedFacts.get(k)!;
      const day = utcDay(r.first_seen_at);
      placed.set(k, {
        app_id: r.app_id,
        before: isNew.has(k) ? undefined : { ...facts, firstSeenDay: day },
        after: { ...facts, firstSeenDay: seenDay.get(k) ?? day },
      });
    }
  }

  // A customer whose receipts only gained transactions has its stored summary extended when that
  // decides it (extendSummary); otherwise its summary is derived again from all it owns.
  const rederive: CustomerKey[] = [];
  const extended: ExtendedSummary[] = [];
  for (const c of sorted([...affected.values()], (c) => key2(c.app_id, c.name))) {
    const k = key2(c.app_id, c.name);
    const receipts = ownedTouched.get(k) ?? [];
    const facts = storedFacts.get(k);
    if (facts === undefined || receipts.some((r) => rewritten.has(r))) {
      rederive.push(c);
      continue;
    }
    const added = receipts.flatMap((r) => appended.get(r) ?? []);
    if (added.length === 0) continue; // only stale snapshots or losing links: nothing it owns changed
    const next = extendSummary(facts, added);
    const digest = storedDigests.get(k) ?? null;
    if (next === undefined) rederive.push(c);
    else extended.push({ ...c, facts: next, grantsDigest: digest === null ? null : grantsDigest(added, digest) });
  }
  // Only a new row, a stored summary or an earlier first-seen day can move a customer's counts.
  const moved: CustomerChange[] = [...placed.values()].filter((c) => c.before === undefined || c.before.firstSeenDay !== c.after?.firstSeenDay);
  for (const stored of await refreshSummaries(m, schema, rederive, extended, writes)) {
    const change = placed.get(key2(stored.app_id, stored.name));
    if (!change?.after) continue; // no row, nothing stored
    if (change.before !== undefined && change.before.firstSeenDay === change.after.firstSeenDay) moved.push(change);
    change.after = { ...stored.facts, firstSeenDay: change.after.firstSeenDay };
  }

  const revenue = {
    appIds: changes.transactions.map((t) => t.app_id),
    transactionIds: changes.transactions.map((t) => t.transaction_id),
    before: `[${revenueBefore.join(',')}]`,
  };
  return { cells: filterCountDeltas(txCells), customerDays: dayCountDeltas(customerDays), customerCells: moved, revenue };
}

/** What a batch changes in the kept counts, written by writeCounts once everything else is. */
type CountChanges = {
  cells: FilterCountDelta[];
  customerDays: DayDelta[];
  customerCells: CustomerChange[];
  /** The transactions the batch wrote and their revenue cells before it (addRevenueChanges). */
  revenue: { appIds: string[]; transactionIds: string[]; before: string };
};

/**
 * Writes the batch's count changes, last of all its writes: every concurrent batch of the app
 * writes the same count rows, so they are held from here to the commit only, and no batch holding
 * them waits for a customer or transaction row (erasures included) another batch holds.
 */
async function writeCounts(m: EntityManager, schema: string, { cells, customerDays, customerCells, revenue }: CountChanges): Promise<void> {
  const q = sql(schema);
  // a transaction's day count changes exactly as its filter counts do, summed over the day: kept
  // beside them because an app's total then sums a row a day, not one per day and product (15 ms
  // against 0.4 ms for 50 products over 1,000 days)
  await writeDeltas(m, q.dayCounts('transaction_day_counts'), sumDayDeltas(cells));
  await writeDeltas(m, q.dayCounts('customer_day_counts'), sumDayDeltas(customerDays));
  await writeDeltas(m, q.filterCounts, cells);
  await writeDeltas(m, q.customerCells, customerCellDeltas(customerCells));
  if (revenue.appIds.length === 0) return;
  await m.query(revenueMonthsSql(schema).shareRates);
  await m.query(q.addRevenueChanges, [revenue.appIds, revenue.transactionIds, revenue.before]);
}

/** Adds a batch's deltas to a table of counts, then drops the rows a negative delta may have left at zero. */
export async function writeDeltas(m: EntityManager, statements: CountStatements, deltas: { n: number }[]): Promise<void> {
  if (deltas.length === 0) return;
  await m.query(statements.add, [JSON.stringify(deltas)]);
  const emptied = deltas.filter((d) => d.n < 0);
  if (emptied.length > 0) await m.query(statements.dropEmpty, [JSON.stringify(emptied)]);
}

type LockedCustomer = {
  app_id: string;
  application_username: string;
  first_seen_at: string;
  transaction_count: number;
  last_purchase_date: string | null;
  expiration_date: string | null;
  last_renewal_date: string | null;
  renewal_intent: string | null;
  current_product_id: string | null;
  grace_from: string | null;
  billing_retry: boolean;
  /** bigint, as text */
  grants_digest: string | null;
};

/** A reason may quote what was refused; dead-lettering must not fail on the same content. */
const storableText = (text: string) => text.replaceAll('\u0000', '\\u0000').toWellFormed();

/** Offsets may skip (compaction, transaction markers) but never go back: anything else is a bug upstream. */
function assertAscending(batch: Batch): void {
  for (let i = 1; i < batch.messages.length; i++) {
    if (BigInt(batch.messages[i].offset) <= BigInt(batch.messages[i - 1].offset)) {
      throw new Error(`batch of ${batch.topic}/${batch.partition} is not in offset order at ${batch.messages[i - 1].offset} -> ${batch.messages[i].offset}`);
    }
  }
}
