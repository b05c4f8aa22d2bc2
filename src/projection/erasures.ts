// Customer erasure on the live path (docs/privacy.md, docs/api.md "Erasure"). The rule, the same on
// every path (bulk fold: bulk-load.sql.ts foldErasures/eraseReceiptOwners/foldCustomers):
// an event naming username U dated at or before U's latest erasure names no one. Its link still
// competes for the receipt (by its version, as any link), but a winning erased link leaves the
// receipt without owner; it makes no sighting. U is listed again only from an event dated after.
import type { KeyObject } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { erasureHash, erasureKey } from '../customers/erase-customer/erasure-hash.js';
import type { PurchaseEvent } from '../events/purchase-event.js';
import { iso } from './customer-summary.sql.js';
import { refreshSummaries } from './customer-summaries.js';
import type { CellFacts, CustomerChange, PlacedFacts } from './customer-cells.js';
import { utcDay, type DayDelta } from './day-counts.js';
import type { IsErased } from './project-events.js';

type Manager = Pick<EntityManager, 'query' | 'connection'>;

/** One erasure of the batch, its username resolved to the keyed hash. */
export type BatchErasure = { app_id: string; username_hash: string; erased_at: string };

const k2 = (a: string, b: string) => `${a}\u0000${b}`;

/**
 * What the batch needs to know of erasures: the predicate projectEvents applies (erasures stored
 * before and those in the batch itself, so any split into batches decides alike) and the batch's
 * own erasures, hashed. Costs one indexed read when the batch names anyone.
 */
export async function erasuresFor(m: Manager, schema: string, events: readonly PurchaseEvent[]): Promise<{ isErased: IsErased; erasures: BatchErasure[] }> {
  const named = new Map<string, { app_id: string; name: string }>();
  const erasures: BatchErasure[] = [];
  let key: KeyObject | undefined;
  const hash = async (app: string, name: string) => erasureHash((key ??= await erasureKey(m.connection, m)), app, name);
  for (const e of events) {
    if (e.type === 'customer.erased') {
      erasures.push({ app_id: e.appId, username_hash: e.data.usernameHash ?? (await hash(e.appId, e.data.applicationUsername!)), erased_at: e.time });
    } else if (e.data.applicationUsername !== undefined) {
      named.set(k2(e.appId, e.data.applicationUsername), { app_id: e.appId, name: e.data.applicationUsername });
    }
  }
  if (named.size === 0) return { isErased: () => false, erasures };
  const hashes = new Map<string, string>();
  for (const [k, n] of named) hashes.set(k, await hash(n.app_id, n.name));
  const latest = new Map<string, string>();
  const note = (app: string, h: string, at: string) => {
    const known = latest.get(k2(app, h));
    if (known === undefined || at > known) latest.set(k2(app, h), at);
  };
  for (const e of erasures) note(e.app_id, e.username_hash, e.erased_at);
  const list = [...named.values()];
  const stored = (await m.query(
    `SELECT e.app_id, e.username_hash, ${iso('e.erased_at')} AS erased_at FROM ${schema}.erasures e
     JOIN unnest($1::text[], $2::text[]) AS k(app_id, h) ON e.app_id = k.app_id AND e.username_hash = k.h`,
    [list.map((n) => n.app_id), list.map((n) => hashes.get(k2(n.app_id, n.name))!)],
  )) as BatchErasure[];
  for (const e of stored) note(e.app_id, e.username_hash, e.erased_at);
  if (latest.size === 0) return { isErased: () => false, erasures };
  return {
    isErased: (app, name, time) => {
      const h = hashes.get(k2(app, name));
      const at = h === undefined ? undefined : latest.get(k2(app, h));
      return at !== undefined && time <= at;
    },
    erasures,
  };
}

/** What an erasure changed besides its own table: the customer count changes and the customer rows deleted. */
export type ErasureChanges = { days: DayDelta[]; cells: CustomerChange[]; deleted: { app_id: string; key: string }[] };

const NOTHING: ErasureChanges = { days: [], cells: [], deleted: [] };

/**
 * Applies the batch's erasures to what earlier batches stored: receipts whose winning link named the
 * customer at or before the erasure lose their owner; the customer row goes unless an event after
 * the erasure named them. Scans the application's receipts and customers once per batch that holds
 * erasures (rare). Writes the read model's tables only: the rows deleted and the count changes (per
 * first-seen day, per filter cell) are returned, for the change feed, the webhooks and the counts to
 * follow in the same transaction (applyBatch).
 */
export async function applyErasures(m: Manager, schema: string, erasures: readonly BatchErasure[]): Promise<ErasureChanges> {
  if (erasures.length === 0) return NOTHING;
  const latest = new Map<string, BatchErasure>();
  for (const e of erasures) {
    const known = latest.get(k2(e.app_id, e.username_hash));
    if (!known || e.erased_at > known.erased_at) latest.set(k2(e.app_id, e.username_hash), e);
  }
  const list = [...latest.values()].sort((a, b) => (k2(a.app_id, a.username_hash) < k2(b.app_id, b.username_hash) ? -1 : 1));
  const args = [list.map((e) => e.app_id), list.map((e) => e.username_hash), list.map((e) => e.erased_at)];
  await m.query(
    `INSERT INTO ${schema}.erasures AS s (app_id, username_hash, erased_at)
     SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[]) ORDER BY 1, 2
     ON CONFLICT (app_id, username_hash) DO UPDATE SET erased_at = greatest(s.erased_at, excluded.erased_at)`,
    args,
  );
  // The customers erased, found by hash (one scan of the applications' customers), locked.
  const customers = (await m.query(
    `SELECT c.app_id, c.application_username, ${iso('c.first_seen_at')} AS first_seen_at, ${iso('k.erased_at')} AS erased_at,
            ${iso('c.expiration_date')} AS "expirationDate", c.current_product_id AS "productId", c.renewal_intent AS "renewalIntent",
            ${iso('c.grace_from')} AS "graceFrom", c.billing_retry AS "billingRetry"
     FROM ${schema}.customers c
     JOIN unnest($1::text[], $2::text[], $3::timestamptz[]) AS k(app_id, h, erased_at)
       ON c.app_id = k.app_id AND public.erasure_hash(c.app_id, c.application_username) = k.h
     ORDER BY c.app_id, c.application_username FOR UPDATE OF c`,
    args,
  )) as ({ app_id: string; application_username: string; first_seen_at: string; erased_at: string } & CellFacts)[];
  if (customers.length === 0) return NOTHING;
  const names = [customers.map((c) => c.app_id), customers.map((c) => c.application_username), customers.map((c) => c.erased_at)];
  // Receipts their links won at or before the erasure: no owner any more.
  await m.query(
    `UPDATE ${schema}.receipts r SET application_username = NULL
     FROM unnest($1::text[], $2::text[], $3::timestamptz[]) AS k(app_id, name, erased_at)
     WHERE r.app_id = k.app_id AND r.application_username = k.name AND r.version_time <= k.erased_at`,
    names,
  );
  // Seen after the erasure (an event dated later, applied before it): the customer stays, first seen
  // at its earliest link it still owns (docs/privacy.md: the one approximation of the live path).
  const owned = (await m.query(
    `SELECT r.app_id, r.application_username, ${iso('min(r.version_time)')} AS first_link
     FROM ${schema}.receipts r JOIN unnest($1::text[], $2::text[]) AS k(app_id, name) ON r.app_id = k.app_id AND r.application_username = k.name
     GROUP BY 1, 2`,
    names.slice(0, 2),
  )) as { app_id: string; application_username: string; first_link: string }[];
  const firstLink = new Map(owned.map((o) => [k2(o.app_id, o.application_username), o.first_link]));
  const gone: typeof customers = [];
  const moved: { app_id: string; name: string; from: string; to: string }[] = [];
  const kept: { app_id: string; name: string }[] = [];
  for (const c of customers) {
    const link = firstLink.get(k2(c.app_id, c.application_username));
    if (c.first_seen_at > c.erased_at) kept.push({ app_id: c.app_id, name: c.application_username });
    else if (link === undefined) gone.push(c);
    else {
      moved.push({ app_id: c.app_id, name: c.application_username, from: c.first_seen_at, to: link });
      kept.push({ app_id: c.app_id, name: c.application_username });
    }
  }
  const days: DayDelta[] = [
    ...gone.map((c) => ({ app_id: c.app_id, day: utcDay(c.first_seen_at), n: -1 })),
    ...moved.flatMap((c) => [
      { app_id: c.app_id, day: utcDay(c.from), n: -1 },
      { app_id: c.app_id, day: utcDay(c.to), n: 1 },
    ]),
  ];
  if (gone.length > 0) {
    const goneArgs = [gone.map((c) => c.app_id), gone.map((c) => c.application_username)];
    await m.query(
      `DELETE FROM ${schema}.customers c USING unnest($1::text[], $2::text[]) AS k(app_id, name) WHERE c.app_id = k.app_id AND c.application_username = k.name`,
      goneArgs,
    );
  }
  if (moved.length > 0) {
    await m.query(
      `UPDATE ${schema}.customers c SET first_seen_at = k.at FROM unnest($1::text[], $2::text[], $3::timestamptz[]) AS k(app_id, name, at) WHERE c.app_id = k.app_id AND c.application_username = k.name`,
      [moved.map((c) => c.app_id), moved.map((c) => c.name), moved.map((c) => c.to)],
    );
  }
  const placedAt = (c: CellFacts, at: string): PlacedFacts => ({ ...c, firstSeenDay: utcDay(at) });
  const cells: CustomerChange[] = gone.map((c) => ({ app_id: c.app_id, before: placedAt(c, c.first_seen_at) }));
  const movedTo = new Map(moved.map((c) => [k2(c.app_id, c.name), c.to]));
  const keptKeys = new Set(kept.map((c) => k2(c.app_id, c.name)));
  const keptChanges = new Map<string, CustomerChange>();
  for (const c of customers) {
    const k = k2(c.app_id, c.application_username);
    if (!keptKeys.has(k)) continue;
    keptChanges.set(k, { app_id: c.app_id, before: placedAt(c, c.first_seen_at), after: placedAt(c, movedTo.get(k) ?? c.first_seen_at) });
  }
  for (const stored of await refreshSummaries(m, schema, kept)) {
    const change = keptChanges.get(k2(stored.app_id, stored.name))!;
    change.after = { ...stored.facts, firstSeenDay: change.after!.firstSeenDay };
  }
  cells.push(...keptChanges.values());
  return { days, cells, deleted: gone.map((c) => ({ app_id: c.app_id, key: c.application_username })) };
}
