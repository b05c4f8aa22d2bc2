import { preparedQuery, type Queryable } from '../database/prepared.js';
import { HIGH_WATER, KEY_COLUMN, type FeedTable } from './change-positions.sql.js';
import { encodeCursor, type ChangeCursor } from './change-cursor.js';

/**
 * Where each row stands (same order as rows), where the page ends (`last`: the cursor to read on
 * from) and the same in the unsigned form the service stores for itself (`next`). The API hands out
 * `last` signed (CursorSigner.issue).
 */
export type ChangePage<Row> = {
  rows: Row[];
  positions: ChangeCursor[];
  last: ChangeCursor;
  next: string;
  /** Per row: a deletion entry (public.feed_deletions), whose row holds only its key (docs/change-feed.md, "Deletions"), and when it was deleted. */
  deleted: (string | undefined)[];
};

/** Runs one statement: the pool's prepared statements for the API, a transaction's manager elsewhere. */
export type RunQuery = <R>(name: string, sql: string, params: unknown[]) => Promise<R[]>;
export const onPool =
  (db: Queryable): RunQuery =>
  (name, sql, params) =>
    preparedQuery(db, name, sql, params);

/**
 * Rows changed after `after`, in change order, with the deletion entries of public.feed_deletions
 * merged in (position, key) order. Only positions below the high-water mark are read: a transaction
 * still running may yet commit rows ordered before ones already committed, and a client that skipped
 * past them would never see them. A deleted row comes with its key alone (the shown columns NULL,
 * changeDeletedAt set). Only entries at or above $5 (the position the client began reading at,
 * docs/change-feed.md "Deletions"): one deleted before a client began cannot concern a row it holds,
 * and naming it would reveal an erased customer. Both parts are range reads on their (app_id, ..., position, key) indexes.
 *
 * A deletion entry whose key is back in the table below the entry's position comes as that row: a
 * position is the writer's transaction id, taken at its first write, so a batch that began before
 * the erasure and signed the customer up again once the erasure had committed positions the new row
 * below the deletion entry. Every id below the entry has ended when it is read, so the row is there
 * and final; shown as a deletion, it would delete a client's copy of a customer who is listed.
 *
 * Nothing at all while this server's high-water mark is below $5: a replica further behind than the
 * server where the client began (docs/scaling.md) may still hold rows deleted before then, whose
 * deletion entries this client is never shown; it gets an empty page (the same cursor back) until
 * the replica has caught up.
 */
export function changesSql(table: FeedTable, columns: string): string {
  const key = KEY_COLUMN[table];
  // The mark once per statement (both parts and the origin test share it): its pg_stat_activity
  // look-up is the costly part, and four InitPlans would run it four times.
  const mark = '(SELECT hw FROM mark)';
  return `
    WITH mark AS MATERIALIZED (SELECT ${HIGH_WATER} AS hw),
    picked AS (
      (SELECT t.change_position AS pos, t.${key} AS k, NULL::timestamptz AS deleted_at FROM read_model.${table} t
       WHERE t.app_id = $1 AND (t.change_position, t.${key}) > ($2::bigint, $3::text) AND t.change_position < ${mark}
         AND $5::bigint <= ${mark}
       ORDER BY t.change_position, t.${key} LIMIT $4)
      UNION ALL
      (SELECT d.change_position, d.row_key, d.deleted_at FROM public.feed_deletions d
       WHERE d.app_id = $1 AND d.feed_table = '${table}' AND (d.change_position, d.row_key) > ($2::bigint, $3::text)
         AND d.change_position >= $5::bigint AND d.change_position < ${mark} AND $5::bigint <= ${mark}
       ORDER BY d.change_position, d.row_key LIMIT $4)
      ORDER BY 1, 2, 3 NULLS FIRST LIMIT $4)
    SELECT p.pos::text AS "changePosition", p.k AS "changeKey", CASE WHEN t.${key} IS NULL THEN p.deleted_at END AS "changeDeletedAt", ${columns}
    FROM picked p LEFT JOIN read_model.${table} t ON t.app_id = $1 AND t.${key} = p.k AND (p.deleted_at IS NULL OR t.change_position < p.pos)
    ORDER BY p.pos, p.k, p.deleted_at NULLS FIRST`;
}

type Positioned = { changePosition: string; changeKey: string; changeDeletedAt?: Date | null };

export async function readChanges<Row extends object>(
  run: RunQuery,
  table: FeedTable,
  columns: string,
  appId: string,
  after: ChangeCursor,
  limit: number,
  /** Deletion entries are merged in from this position on (see changesSql). */
  deletionsFrom: string,
): Promise<ChangePage<Row>> {
  if (limit === 0) return { rows: [], positions: [], last: after, next: encodeCursor(after), deleted: [] };
  const found = await run<Row & Positioned>(`changes-${table}`, changesSql(table, columns), [appId, after.position, after.key, limit, deletionsFrom]);
  const positions = found.map((r) => ({ position: r.changePosition, key: r.changeKey }));
  const deleted = found.map((r) => (r.changeDeletedAt ? new Date(r.changeDeletedAt).toISOString() : undefined));
  const rows = found.map(({ changePosition: _p, changeKey: _k, changeDeletedAt: _d, ...row }) => row as unknown as Row);
  const last = positions.at(-1) ?? after;
  return { rows, positions, last, next: encodeCursor(last), deleted };
}
