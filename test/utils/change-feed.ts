import type { DataSource } from 'typeorm';
import { HIGH_WATER } from '../../src/change-feed/change-positions.sql.js';
import type { TestApp } from './app.js';
import { linkEvent, txEvent } from './events.js';

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
 * True once every change of the application lies below the feed's high-water mark: a feed read (or a
 * webhook queueing round) started after this sees all of them. A transaction elsewhere in the same
 * database (another writer, a background job) holds the mark back, so "no delivery pending" alone
 * does not mean the copies are complete.
 */
export async function feedSettled(db: DataSource, appId: string): Promise<boolean> {
  const [{ settled }] = (await db.query(
    `SELECT NOT EXISTS (SELECT 1 FROM read_model.customers WHERE app_id = $1 AND change_position >= ${HIGH_WATER})
        AND NOT EXISTS (SELECT 1 FROM read_model.transactions WHERE app_id = $1 AND change_position >= ${HIGH_WATER})
        AND NOT EXISTS (SELECT 1 FROM public.feed_deletions WHERE app_id = $1 AND change_position >= ${HIGH_WATER}) AS settled`,
    [appId],
  )) as { settled: boolean }[];
  return settled;
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
