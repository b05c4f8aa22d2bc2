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
 * A cursor below the highest purged deletion entry could have been shown one (unless its client
 * began after it): the client would keep a row that was deleted. Refused, so it re-reads from 0.
 * Read where the page is read: a replica behind a purge still holds the entries.
 */
export async function refuseIfPurged(db: Queryable, changedAfter: string, after: ChangeCursor): Promise<void> {
  if (changedAfter === '0') return;
  const [{ through }] = await preparedQuery<{ through: string }>(db, 'feed-deletions-purged', `SELECT through::text FROM public.feed_deletions_purged`, []);
  const purged = BigInt(through);
  if (purged === 0n || BigInt(after.position) > purged || (after.origin !== undefined && BigInt(after.origin) > purged)) return;
  throw new InvalidParameterError(
    'changedAfter',
    `changedAfter is older than the deletion entries the feed keeps (${KEEP_FEED_DELETIONS_MS / 86_400_000} days): restart from changedAfter=0 and replace your copy (docs/change-feed.md, "Deletions")`,
  );
}
