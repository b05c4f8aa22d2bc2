import type { DataSource } from 'typeorm';
import { preparedQuery } from '../database/prepared.js';
import { HIGH_WATER, KEY_COLUMN, type FeedTable } from './change-positions.sql.js';
import { encodeCursor, type ChangeCursor } from './change-cursor.js';

/**
 * Where each row stands (same order as rows), where the page ends (`last`: the cursor to read on
 * from) and the same in the unsigned form the service stores for itself (`next`). The API hands out
 * `last` signed (CursorSigner.issue).
 */
export type ChangePage<Row> = { rows: Row[]; positions: ChangeCursor[]; last: ChangeCursor; next: string };

/** Runs one statement: the pool's prepared statements for the API, a transaction's manager elsewhere. */
export type RunQuery = <R>(name: string, sql: string, params: unknown[]) => Promise<R[]>;
export const onPool =
  (db: DataSource): RunQuery =>
  (name, sql, params) =>
    preparedQuery(db, name, sql, params);

/**
 * Rows changed after `after`, in change order. Only positions below the high-water mark are read:
 * a transaction still running may yet commit rows ordered before ones already committed, and a
 * client that skipped past them would never see them.
 */
export function changesSql(table: FeedTable, columns: string): string {
  const key = KEY_COLUMN[table];
  return `
    SELECT t.change_position::text AS "changePosition", t.${key} AS "changeKey", ${columns}
    FROM read_model.${table} t
    WHERE t.app_id = $1 AND (t.change_position, t.${key}) > ($2::bigint, $3::text) AND t.change_position < ${HIGH_WATER}
    ORDER BY t.change_position, t.${key}
    LIMIT $4`;
}

type Positioned = { changePosition: string; changeKey: string };

export async function readChanges<Row extends object>(
  run: RunQuery,
  table: FeedTable,
  columns: string,
  appId: string,
  after: ChangeCursor,
  limit: number,
): Promise<ChangePage<Row>> {
  if (limit === 0) return { rows: [], positions: [], last: after, next: encodeCursor(after) };
  const found = await run<Row & Positioned>(`changes-${table}`, changesSql(table, columns), [appId, after.position, after.key, limit]);
  const positions = found.map((r) => ({ position: r.changePosition, key: r.changeKey }));
  const rows = found.map(({ changePosition: _p, changeKey: _k, ...row }) => row as unknown as Row);
  const last = positions.at(-1) ?? after;
  return { rows, positions, last, next: encodeCursor(last) };
}
