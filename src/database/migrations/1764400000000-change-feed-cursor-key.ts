import { randomBytes } from 'node:crypto';
import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The key change-feed cursors are signed with (docs/change-feed.md, "Cursors"): 32 random bytes made
 * once, here, and read by every instance at start-up. In the database, so every instance sharing it
 * (and every streaming replica of it) accepts the cursors any of them issued, across restarts, with
 * nothing to configure. One row: the primary key only takes `true`.
 */
export class ChangeFeedCursorKey1764400000000 implements MigrationInterface {
  name = 'ChangeFeedCursorKey1764400000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE public.change_feed_cursor_key (
        only_row   boolean     PRIMARY KEY DEFAULT true CHECK (only_row),
        key        bytea       NOT NULL CHECK (octet_length(key) = 32),
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`INSERT INTO public.change_feed_cursor_key (key) VALUES ($1)`, [randomBytes(32)]);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE public.change_feed_cursor_key`);
  }
}
