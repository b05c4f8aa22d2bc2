// The change feed's deletion entries (public.feed_deletions, docs/change-feed.md "Deletions"): the
// feed's own table, written only through these statements. Erasures, rebuilds and the purge on
// webhook dispatchers hand the feed the rows that went; they do not write the table themselves.

import type { EntityManager } from 'typeorm';
import { KEY_COLUMN, type FeedTable } from './change-positions.sql.js';

export const feedDeletionsSql = {
  /** Rows of `table` that are gone: $1 application ids, $2 their keys (one entry per row, at this transaction's position). */
  record: (table: FeedTable) => `
    INSERT INTO public.feed_deletions (app_id, feed_table, row_key)
    SELECT a, '${table}', k FROM unnest($1::text[], $2::text[]) AS d(a, k) ON CONFLICT DO NOTHING`,

  /**
   * Rows live lists and the generation `schema` does not (a rebuild from a partial log, or a drift it
   * corrects): deletion entries at the switch's position, so feed clients and webhook endpoints that
   * hold the row delete it, as after an erasure (docs/change-feed.md, "Rebuilds"). Run under the
   * live-projection lock, before the schemas are renamed; one anti-join per table.
   */
  announceDropped: (schema: string, table: FeedTable) => {
    const key = KEY_COLUMN[table];
    return `
    INSERT INTO public.feed_deletions (app_id, feed_table, row_key)
    SELECT l.app_id, '${table}', l.${key} FROM read_model.${table} l
    WHERE NOT EXISTS (SELECT 1 FROM ${schema}.${table} g WHERE g.app_id = l.app_id AND g.${key} = l.${key})
    ON CONFLICT DO NOTHING`;
  },

  /**
   * Deletion entries older than $1 ms go (they name erased customers), and the highest position gone
   * is remembered: cursors below it are refused (docs/change-feed.md, "Deletions").
   */
  prune: `
    WITH gone AS (
      DELETE FROM public.feed_deletions WHERE ctid IN (
        SELECT ctid FROM public.feed_deletions WHERE deleted_at < now() - $1 * interval '1 millisecond' LIMIT 10000)
      RETURNING change_position)
    UPDATE public.feed_deletions_purged SET through = greatest(through, (SELECT max(change_position) FROM gone))
    WHERE EXISTS (SELECT 1 FROM gone)`,
};

/** Deletion entries for rows of `table` that went in the caller's transaction. */
export async function recordFeedDeletions(m: Pick<EntityManager, 'query'>, table: FeedTable, rows: readonly { app_id: string; key: string }[]): Promise<void> {
  if (rows.length === 0) return;
  await m.query(feedDeletionsSql.record(table), [rows.map((r) => r.app_id), rows.map((r) => r.key)]);
}
