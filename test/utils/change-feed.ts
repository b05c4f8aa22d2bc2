import pg from 'pg';
import type { DataSource, EntityManager } from 'typeorm';
import { decodeCursor } from '../../src/change-feed/change-cursor.js';
import { webhooksSql } from '../../src/webhooks/webhooks.sql.js';
import type { TestApp } from './app.js';
import { linkEvent, txEvent } from './events.js';
import { readsFromStandbys } from './replicas.js';

export type Row = Record<string, unknown>;
export type Listing = 'customers' | 'transactions';
export const ROW_KEY: Record<Listing, string> = { customers: 'applicationUsername', transactions: 'transactionId' };

/** What a syncing client does: follow paging.next until a page comes back empty. */
export async function drainFeed(api: TestApp, token: string, listing: Listing, cursor: string, received: Map<string, Row>, limit = 7): Promise<string> {
  for (;;) {
    const res = await api.get(`/v2/${listing}?changedAfter=${encodeURIComponent(cursor)}&limit=${limit}`, token);
    if (res.status !== 200) throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
    for (const row of res.body.rows as Row[]) {
      // a deletion entry (docs/change-feed.md, "Deletions"): the client drops its copy
      if (row.deleted === true) received.delete(row[ROW_KEY[listing]] as string);
      else received.set(row[ROW_KEY[listing]] as string, row);
    }
    cursor = res.body.paging.next;
    if (res.body.rows.length === 0) return cursor;
  }
}

/** Every row the listing holds, by key (skip/limit paging). */
export async function listAll(api: TestApp, token: string, listing: Listing): Promise<Map<string, Row>> {
  const all = new Map<string, Row>();
  for (let skip = 0; ; skip += 1000) {
    const res = await api.get(`/v2/${listing}?limit=1000&skip=${skip}`, token);
    for (const r of res.body.rows as Row[]) all.set(r[ROW_KEY[listing]] as string, r);
    if (res.body.rows.length < 1000) return all;
  }
}

/**
 * A client syncing both listings of the given applications through the change feed until told to
 * stop; then it drains what is left and must hold exactly the rows the listings show.
 */
export function followFeed(api: TestApp, apps: string[]): { expectListedRows(): Promise<void> } {
  const state = apps.flatMap((app) =>
    (['customers', 'transactions'] as const).map((listing) => ({ app, listing, token: api.token(app), cursor: '0', rows: new Map<string, Row>() })),
  );
  let stop = false;
  const loop = (async () => {
    while (!stop) {
      for (const s of state) s.cursor = await drainFeed(api, s.token, s.listing, s.cursor, s.rows, 50);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  return {
    async expectListedRows() {
      stop = true;
      await loop;
      for (const s of state) {
        await drainFeed(api, s.token, s.listing, s.cursor, s.rows, 1000);
        expect({ app: s.app, listing: s.listing, rows: s.rows }).toEqual({ app: s.app, listing: s.listing, rows: await listAll(api, s.token, s.listing) });
      }
    },
  };
}

/**
 * Whether every active webhook endpoint of the application (or only `endpointId`) has its cursors past
 * the application's last change in both tables, deletion entries included, in the feed's (position,
 * key) order. A queueing round moves the cursors in the transaction that queues the rows it passes,
 * so once the changes are over, this means every one was queued. Asked of the cursors, not of the
 * high-water mark: a mark read before a round can be above the round's own. A transaction of another
 * database on the server, running in that round's snapshot and ending before it looks at
 * pg_stat_activity, counts as this database's and holds that one read's mark back
 * (src/change-feed/change-positions.sql.ts); every test file's database shares the server.
 */
export async function queuedEverything(db: DataSource, appId: string, endpointId?: string): Promise<boolean> {
  const endpoints = (await db.query(
    `SELECT customers_cursor, transactions_cursor FROM public.webhook_endpoints WHERE app_id = $1 AND disabled_at IS NULL AND ($2::bigint IS NULL OR id = $2::bigint)`,
    [appId, endpointId ?? null],
  )) as { customers_cursor: string; transactions_cursor: string }[];
  for (const endpoint of endpoints) {
    const customers = decodeCursor(endpoint.customers_cursor);
    const transactions = decodeCursor(endpoint.transactions_cursor);
    const [{ queued }] = (await db.query(
      `SELECT NOT EXISTS (SELECT 1 FROM read_model.customers WHERE app_id = $1 AND (change_position, application_username) > ($2::bigint, $3::text))
          AND NOT EXISTS (SELECT 1 FROM public.feed_deletions WHERE app_id = $1 AND feed_table = 'customers' AND (change_position, row_key) > ($2::bigint, $3::text))
          AND NOT EXISTS (SELECT 1 FROM read_model.transactions WHERE app_id = $1 AND (change_position, transaction_id) > ($4::bigint, $5::text))
          AND NOT EXISTS (SELECT 1 FROM public.feed_deletions WHERE app_id = $1 AND feed_table = 'transactions' AND (change_position, row_key) > ($4::bigint, $5::text)) AS queued`,
      [appId, customers.position, customers.key, transactions.position, transactions.key],
    )) as { queued: boolean }[];
    if (!queued) return false;
  }
  return true;
}

/**
 * A transaction of another database on the same server, holding a transaction id. While it runs, the
 * change feed's high-water mark passes it (it cannot write here); once it has ended, a snapshot that
 * still counts it as running can no longer tell its database and holds the mark below it
 * (src/change-feed/change-positions.sql.ts). So a feed read can have a lower mark than one before it.
 */
export async function transactionElsewhere(): Promise<{ end(): Promise<void> }> {
  const client = new pg.Client({ connectionString: readsFromStandbys ? process.env.TEST_REPLICA_PRIMARY_URL : process.env.TEST_ADMIN_DATABASE_URL });
  await client.connect();
  await client.query('BEGIN');
  await client.query('SELECT pg_current_xact_id()');
  let ended: Promise<void> | undefined;
  return { end: () => (ended ??= client.query('COMMIT').then(() => client.end())) };
}

/**
 * `db` for queueChanges, running `afterSnapshot` with the endpoint's id in each queueing transaction
 * once its first statement took the snapshot (what test files running beside one can do at random,
 * with transactionElsewhere: here on purpose).
 */
export function endingAfterSnapshot(db: DataSource, afterSnapshot: (endpointId: string) => Promise<unknown>): DataSource {
  const bound = (target: object, key: string | symbol): unknown => {
    const value = Reflect.get(target, key) as unknown;
    return typeof value === 'function' ? value.bind(target) : value;
  };
  const manager = (m: EntityManager) =>
    new Proxy(m, {
      get: (target, key) =>
        key === 'query'
          ? async (sql: string, params?: unknown[]) => {
              const result: unknown = await target.query(sql, params);
              if (sql === webhooksSql.tryQueueLock) await afterSnapshot(String(params?.[0]));
              return result;
            }
          : bound(target, key),
    });
  return new Proxy(db, {
    get: (target, key) =>
      key === 'transaction'
        ? (isolation: 'REPEATABLE READ', work: (m: EntityManager) => Promise<unknown>) => target.transaction(isolation, (m) => work(manager(m)))
        : bound(target, key),
  });
}

/** One generated step of the feed property tests (test/change-feed, test/replicas). */
export type FeedStep = { tx: number; user: string | null; expiresDay: number; refunded: boolean };

/** customer.erased naming the user (docs/privacy.md). */
export const erasureEvent = (app: string, user: string, time: string) => ({
  specversion: '1.0',
  id: `erase-${app}-${user}-${time}`,
  source: 'test',
  type: 'customer.erased',
  time,
  appid: app,
  data: { applicationUsername: user },
});

/**
 * The event of step `i`: with `move` (and a user), the step's receipt moving to that user; otherwise
 * a snapshot of transaction `tx` on one of `receipts` receipts, dated by the step's index.
 */
export function feedStepEvent(app: string, i: number, s: FeedStep, move: boolean, receipts: number) {
  const day = String((i % 28) + 1).padStart(2, '0');
  if (move && s.user) return linkEvent({ app, id: `e${i}`, time: `2024-02-${day}T00:00:00Z`, receiptId: `apple:r${s.tx % receipts}`, user: s.user });
  return txEvent({
    app,
    id: `e${i}`,
    time: `2024-01-${day}T00:00:00Z`,
    data: {
      transactionId: `apple:t${s.tx}`,
      receiptId: `apple:r${s.tx % receipts}`,
      purchaseDate: '2024-01-01T00:00:00Z',
      expirationDate: `2024-03-${String(s.expiresDay).padStart(2, '0')}T00:00:00Z`,
      ...(s.user ? { applicationUsername: s.user } : {}),
      ...(s.refunded ? { isExpired: true, cancelationReason: 'Customer', revocationDate: '2024-02-15T00:00:00Z' } : {}),
    },
  });
}
