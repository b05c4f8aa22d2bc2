/**
 * Change-feed deletion entries (they name erased customers) are kept 30 days: a client syncing less
 * often than that restarts from 0 (its cursor is refused), and the erased username does not stay in
 * the database for good (docs/change-feed.md, "Deletions"). As long as failed webhook deliveries.
 */
export const KEEP_FEED_DELETIONS_MS = 30 * 86_400_000;
