import { InvalidParameterError } from '../common/errors.js';
import { preparedQuery, type Queryable } from '../database/prepared.js';
import type { ChangeCursor } from './change-cursor.js';
import { HIGH_WATER } from './change-positions.sql.js';
import { KEEP_FEED_DELETIONS_MS } from './feed-retention.js';

/**
 * Where the client began (docs/change-feed.md, "Deletions"): deletion entries are shown only from
 * there. Starting at 0, that is the high-water mark now, read before the page, so every deletion the
 * client's rows can predate is at or above it; later pages carry it in the signed cursor. Cursors
 * issued before origins existed have none (undefined): they are shown every deletion past them.
 */
export async function feedOrigin(db: Queryable, changedAfter: string, after: ChangeCursor): Promise<string | undefined> {
  if (changedAfter !== '0') return after.origin;
  const [{ mark }] = await preparedQuery<{ mark: string }>(db, 'feed-high-water', `SELECT ${HIGH_WATER}::text AS mark`, []);
  return mark;
}

/**
 * Reads the page (`read`), then refuses the cursor if it is below the highest purged deletion entry
 * and its client did not begin after it: it could have been shown a purged entry, and the client
 * would keep a row that was deleted. Refused, so it re-reads from 0.
 *
 * The mark is read after the page, on the same server: a purge deletes the entries and raises the
 * mark in one transaction, so a page read that no longer saw an entry is followed by a mark read
 * that sees the purge. Read the other way round, a purge committing between the two let the cursor
 * through to a page without its entry. A replica behind a purge still holds the entries, and replays
 * in commit order, so the same holds there.
 */
export async function readUnlessPurged<T>(db: Queryable, changedAfter: string, after: ChangeCursor, read: () => Promise<T>): Promise<T> {
  const result = await read();
  if (changedAfter === '0') return result;
  const [{ through }] = await preparedQuery<{ through: string }>(db, 'feed-deletions-purged', `SELECT through::text FROM public.feed_deletions_purged`, []);
  const purged = BigInt(through);
  if (purged === 0n || BigInt(after.position) > purged || (after.origin !== undefined && BigInt(after.origin) > purged)) return result;
  throw new InvalidParameterError(
    'changedAfter',
    `changedAfter is older than the deletion entries the feed keeps (${KEEP_FEED_DELETIONS_MS / 86_400_000} days): restart from changedAfter=0 and replace your copy (docs/change-feed.md, "Deletions")`,
  );
}
