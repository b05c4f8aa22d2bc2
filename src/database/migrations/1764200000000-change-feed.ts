import { MigrationInterface, QueryRunner } from 'typeorm';
import { CURRENT_XID, FEED_TABLES, KEY_COLUMN, dropStampTriggerSql, installStampTriggerSql, stampFunctionSql } from '../../change-feed/change-positions.sql.js';

/**
 * Change positions on customer and transaction rows for the change feed (`changedAfter`, webhooks).
 * Every existing row is stamped with this migration's position: a client starting from 0 gets all.
 */
export class ChangeFeed1764200000000 implements MigrationInterface {
  name = 'ChangeFeed1764200000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('SET LOCAL statement_timeout = 0');
    // A generation being built has no change positions; it would be switched in without them.
    await q.query(`
      UPDATE public.rebuilds SET status = 'aborted', finished_at = now(),
             report = '{"reason": "read-model schema upgraded (migration ChangeFeed1764200000000); start the rebuild again"}'
      WHERE status = 'running'`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_next CASCADE`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_verify CASCADE`);
    await q.query(`ALTER TABLE public.rebuilds ADD COLUMN changes_from bigint`);

    for (const table of FEED_TABLES) {
      await q.query(`ALTER TABLE read_model.${table} ADD COLUMN change_position bigint`);
      await q.query(`UPDATE read_model.${table} SET change_position = ${CURRENT_XID}`);
      await q.query(`CREATE INDEX ${table}_changes_idx ON read_model.${table} (app_id, change_position, ${KEY_COLUMN[table]})`);
      // Always empty in read_model; in a generation it finds the rows to stamp at the switch.
      await q.query(`CREATE INDEX ${table}_unstamped_idx ON read_model.${table} (app_id) WHERE change_position IS NULL`);
      await q.query(stampFunctionSql(table));
      await q.query(installStampTriggerSql('read_model', table, 'live'));
    }
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of FEED_TABLES) {
      await q.query(dropStampTriggerSql('read_model', table));
      await q.query(`DROP FUNCTION public.stamp_${table}_change()`);
      await q.query(`ALTER TABLE read_model.${table} DROP COLUMN change_position`);
    }
    await q.query(`ALTER TABLE public.rebuilds DROP COLUMN changes_from`);
  }
}
