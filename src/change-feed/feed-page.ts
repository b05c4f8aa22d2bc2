import { preparedQuery, type Queryable } from '../database/prepared.js';
import type { FeedTable } from './change-positions.sql.js';
import { feedOrigin, readUnlessPurged } from './feed-deletions.js';
import { onPool, readChanges, type ChangePage } from './read-changes.js';
import type { CursorSigner } from './signed-cursor.js';

/** What a feed reads: its table, the columns it shows and the statement counting the app's rows. */
export type Feed = { table: FeedTable; columns: string; totalSql: string };

/**
 * One page of an app's feed after `changedAfter` (0 or a cursor this service signed): the rows in
 * change order with the deletion entries from where the client began, the app's total, and the
 * signed cursor to read on from. The endpoint shapes the rows.
 */
export async function readFeedPage<Row extends object>(
  db: Queryable,
  cursors: CursorSigner,
  feed: Feed,
  appId: string,
  changedAfter: string,
  limit: number,
): Promise<{ page: ChangePage<Row>; total: number; next: string }> {
  const after = cursors.verify(feed.table, appId, changedAfter);
  const origin = await feedOrigin(db, changedAfter, after);
  const [[{ total }], page] = await readUnlessPurged(db, changedAfter, after, () =>
    Promise.all([
      preparedQuery<{ total: string }>(db, `${feed.table}-total`, feed.totalSql, [appId]),
      readChanges<Row>(onPool(db), feed.table, feed.columns, appId, after, limit, origin ?? '0'),
    ]),
  );
  return { page, total: Number(total), next: cursors.issue(feed.table, appId, { ...page.last, origin }) };
}
