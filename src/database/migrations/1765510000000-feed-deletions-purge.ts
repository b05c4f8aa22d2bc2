import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Deletion entries of the change feed (they hold an erased customer's username) are purged after
 * 30 days (docs/change-feed.md, "Deletions"). public.feed_deletions_purged keeps the highest
 * position purged, so a cursor from before it, which would have been shown a purged entry, is
 * refused instead of silently missing it. One row. Frozen SQL.
 */
export class FeedDeletionsPurge1765510000000 implements MigrationInterface {
  name = 'FeedDeletionsPurge1765510000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE public.feed_deletions_purged (
        one     boolean PRIMARY KEY DEFAULT true CHECK (one),
        through bigint  NOT NULL DEFAULT 0
      )`);
    await q.query(`INSERT INTO public.feed_deletions_purged DEFAULT VALUES`);
    await q.query(`CREATE INDEX feed_deletions_deleted_at ON public.feed_deletions (deleted_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX public.feed_deletions_deleted_at`);
    await q.query(`DROP TABLE public.feed_deletions_purged`);
  }
}
