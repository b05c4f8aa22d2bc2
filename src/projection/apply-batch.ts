import type { DataSource, EntityManager } from 'typeorm';
import { decodeEvent, type RejectCode } from '../events/decode-event.js';
import type { PurchaseEvent } from '../events/purchase-event.js';
import { sql } from './apply-batch.sql.js';
import { customerSummarySql } from './customer-summary.sql.js';
import { actionForReject } from './reject-policy.js';
import { dayCountDeltas, utcDay } from './day-counts.js';
import { projectEvents, type RowChanges } from './project-events.js';

export type LogMessage = { offset: string; key: string | null; value: Buffer | null };
export type Batch = { topic: string; partition: number; messages: readonly LogMessage[] };
export type DeadLetter = { topic: string; partition: number; offset: string; key: string | null; value: Buffer; code: RejectCode; reason: string };

export type BatchOutcome =
  | {
      kind: 'applied';
      nextOffset: string;
      /** Events that changed (or could have changed) the read models. */
      applied: PurchaseEvent[];
      /** Event ids seen before, ignored. */
      duplicates: number;
      /** Messages below the stored offset: already projected by an earlier run. */
      alreadyProjected: number;
      deadLetters: DeadLetter[];
    }
  | { kind: 'gap'; storedOffset: string };

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
};

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
export const LIVE_SCHEMA = 'read_model';
/** Advisory lock key: shared by every live batch, exclusive while a rebuild switches generations. */
export const LIVE_PROJECTION_LOCK = 727_002;

/**
 * Projects one batch of consecutive messages of one topic partition in a single transaction and
 * records the next offset next to the rows. Safe to call again with the same or overlapping
 * messages: what is below the stored offset is skipped, repeated event ids are ignored. A batch
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
    await m.query('SET LOCAL synchronous_commit = off');
    // Before any table name is resolved: after a generation switch, names bind to the new schema.
    if (liveLock) await m.query('SELECT pg_advisory_xact_lock_shared($1)', [LIVE_PROJECTION_LOCK]);
    const [{ next_offset: stored }] = (await m.query(q.lockOffset, [batch.topic, batch.partition])) as { next_offset: string }[];
    const storedOffset = BigInt(stored);
    const fresh = batch.messages.filter((msg) => BigInt(msg.offset) >= storedOffset);
    if (fresh.length === 0) {
      return { kind: 'applied', nextOffset: stored, applied: [], duplicates: 0, alreadyProjected: batch.messages.length, deadLetters: [] };
    }
    const first = BigInt(fresh[0].offset);
    const logStart = options.logStartOffset === undefined ? storedOffset : BigInt(options.logStartOffset);
    if (first > storedOffset && first > logStart) return { kind: 'gap', storedOffset: stored };

    const events: PurchaseEvent[] = [];
    const deadLetters: DeadLetter[] = [];
    for (const msg of fresh) {
      const decoded = decodeEvent(msg.value);
      if (decoded.ok) events.push(decoded.event);
      else if (actionForReject(decoded.code) === 'dead-letter')
        deadLetters.push({
          topic: batch.topic,
          partition: batch.partition,
          offset: msg.offset,
          key: msg.key,
          value: msg.value ?? Buffer.alloc(0),
          code: decoded.code,
          reason: decoded.reason,
        });
    }

    const unique = firstOfEachId(events);
    let applied: PurchaseEvent[] = [];
    if (unique.length > 0) {
      const claimed = (await m.query(q.claimEvents, [unique.map((e) => e.appId), unique.map((e) => e.id)])) as { app_id: string; event_id: string }[];
      const isNew = new Set(claimed.map((c) => `${c.app_id}\u0000${c.event_id}`));
      applied = unique.filter((e) => isNew.has(`${e.appId}\u0000${e.id}`));
    }

    const changes = projectEvents(applied);
    await writeChanges(m, schema, changes);
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
    const nextOffset = (BigInt(fresh[fresh.length - 1].offset) + 1n).toString();
    await m.query(q.storeOffset, [batch.topic, batch.partition, nextOffset]);
    await options.beforeCommit?.(deadLetters);
    return {
      kind: 'applied',
      nextOffset,
      applied,
      duplicates: events.length - applied.length,
      alreadyProjected: batch.messages.length - fresh.length,
      deadLetters,
    };
  };
  return db.transaction(run);
}

const key2 = (a: string, b: string) => `${a}\u0000${b}`;
const sorted = <T>(items: T[], key: (t: T) => string) => [...items].sort((x, y) => (key(x) < key(y) ? -1 : key(x) > key(y) ? 1 : 0));

/**
 * Writes one batch's row changes, keeping the day counts and customer summaries exact. Lock order
 * is the same in every batch (transactions, receipts, customers, day counts), each in key order,
 * so concurrent batches wait for each other instead of deadlocking.
 */
async function writeChanges(m: EntityManager, schema: string, changes: RowChanges): Promise<void> {
  const q = sql(schema);
  const summary = customerSummarySql(schema);
  const txDays: Parameters<typeof dayCountDeltas>[0] = [];

  if (changes.transactions.length > 0) {
    const txs = sorted(changes.transactions, (t) => key2(t.app_id, t.transaction_id));
    const inserted = (await m.query(q.insertNewTransactions, [JSON.stringify(txs)])) as { app_id: string; transaction_id: string }[];
    const isNew = new Set(inserted.map((r) => key2(r.app_id, r.transaction_id)));
    const existing = txs.filter((t) => !isNew.has(key2(t.app_id, t.transaction_id)));
    const before = new Map<string, string>();
    if (existing.length > 0) {
      const rows = (await m.query(q.lockTransactions, [existing.map((t) => t.app_id), existing.map((t) => t.transaction_id)])) as {
        app_id: string;
        transaction_id: string;
        occurred_at: Date;
      }[];
      for (const r of rows) before.set(key2(r.app_id, r.transaction_id), utcDay(r.occurred_at));
      const json = JSON.stringify(existing);
      await m.query(q.upsertTransactions, [json]);
      await m.query(q.lowerOccurredAt, [json]);
    }
    for (const t of txs) {
      const k = key2(t.app_id, t.transaction_id);
      txDays.push({ app_id: t.app_id, key: k, day: utcDay(t.occurred_at), previousDay: isNew.has(k) ? undefined : before.get(k) });
    }
  }

  // Whose summary can change: the owners, before and after, of every receipt the batch touches.
  const receiptKeys = new Map<string, { app_id: string; receipt_id: string }>();
  for (const t of changes.transactions) receiptKeys.set(key2(t.app_id, t.receipt_id), { app_id: t.app_id, receipt_id: t.receipt_id });
  for (const r of changes.receipts) receiptKeys.set(key2(r.app_id, r.receipt_id), { app_id: r.app_id, receipt_id: r.receipt_id });
  const touched = [...receiptKeys.values()];
  const owners = async () =>
    touched.length === 0
      ? []
      : ((await m.query(q.receiptOwners, [touched.map((r) => r.app_id), touched.map((r) => r.receipt_id)])) as { app_id: string; application_username: string }[]);
  const affected = new Map<string, { app_id: string; name: string }>();
  for (const o of await owners()) affected.set(key2(o.app_id, o.application_username), { app_id: o.app_id, name: o.application_username });
  if (changes.receipts.length > 0) {
    await m.query(q.upsertReceipts, [JSON.stringify(sorted(changes.receipts, (r) => key2(r.app_id, r.receipt_id)))]);
    for (const o of await owners()) affected.set(key2(o.app_id, o.application_username), { app_id: o.app_id, name: o.application_username });
  }

  const seen = sorted(changes.customers, (c) => key2(c.app_id, c.application_username));
  const customerKeys = new Map(affected);
  for (const c of seen) customerKeys.set(key2(c.app_id, c.application_username), { app_id: c.app_id, name: c.application_username });
  const customers = sorted([...customerKeys.values()], (c) => key2(c.app_id, c.name));
  const customerDays: Parameters<typeof dayCountDeltas>[0] = [];
  if (customers.length > 0) {
    const locked = (await m.query(q.lockCustomers, [customers.map((c) => c.app_id), customers.map((c) => c.name)])) as {
      app_id: string;
      application_username: string;
      first_seen_at: Date;
    }[];
    const before = new Map(locked.map((r) => [key2(r.app_id, r.application_username), utcDay(r.first_seen_at)]));
    if (seen.length > 0) {
      const args = [seen.map((c) => c.app_id), seen.map((c) => c.application_username), seen.map((c) => c.first_seen_at)];
      const inserted = (await m.query(q.insertNewCustomers, args)) as { app_id: string; application_username: string }[];
      const isNew = new Set(inserted.map((r) => key2(r.app_id, r.application_username)));
      await m.query(q.lowerFirstSeen, args);
      for (const c of seen) {
        const k = key2(c.app_id, c.application_username);
        customerDays.push({ app_id: c.app_id, key: k, day: utcDay(c.first_seen_at), previousDay: isNew.has(k) ? undefined : before.get(k) });
      }
    }
  }

  for (const [table, rows] of [['transaction_day_counts', txDays], ['customer_day_counts', customerDays]] as const) {
    const deltas = dayCountDeltas(rows);
    if (deltas.length === 0) continue;
    await m.query(q.addDayCounts(table), [deltas.map((d) => d.app_id), deltas.map((d) => d.day), deltas.map((d) => d.n)]);
    const emptied = deltas.filter((d) => d.n < 0);
    if (emptied.length > 0) await m.query(q.dropEmptyDays(table), [emptied.map((d) => d.app_id), emptied.map((d) => d.day)]);
  }

  if (affected.size > 0) {
    const list = sorted([...affected.values()], (c) => key2(c.app_id, c.name));
    await m.query(summary.refresh, [list.map((c) => c.app_id), list.map((c) => c.name)]);
  }
}

/** Offsets may skip (compaction, transaction markers) but never go back: anything else is a bug upstream. */
function assertAscending(batch: Batch): void {
  for (let i = 1; i < batch.messages.length; i++) {
    if (BigInt(batch.messages[i].offset) <= BigInt(batch.messages[i - 1].offset)) {
      throw new Error(`batch of ${batch.topic}/${batch.partition} is not in offset order at ${batch.messages[i - 1].offset} -> ${batch.messages[i].offset}`);
    }
  }
}

function firstOfEachId(events: PurchaseEvent[]): PurchaseEvent[] {
  const seen = new Set<string>();
  return events.filter((e) => {
    const key = `${e.appId}\u0000${e.id}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
