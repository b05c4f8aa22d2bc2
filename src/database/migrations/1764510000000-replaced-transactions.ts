import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Replacement by another transaction (docs/api.md, rule 2; issue 21): a transaction's shown
 * is_upgraded and cancelation_reason now also say when another transaction of its subscription
 * replaced it, so the snapshot's own values are kept beside them (snapshot_*), to show again if the
 * replacement goes away. Existing rows show their snapshot's values: the new rule reaches them when
 * their receipt next changes, or at once with `rebuild` (docs/api.md, "Upgrading an existing database").
 */
export class ReplacedTransactions1764510000000 implements MigrationInterface {
  name = 'ReplacedTransactions1764510000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('SET LOCAL statement_timeout = 0');
    // A generation being built has the old shape; it would be switched in without the new columns.
    await q.query(`
      UPDATE public.rebuilds SET status = 'aborted', finished_at = now(),
             report = '{"reason": "read-model schema upgraded (migration ReplacedTransactions1764510000000); start the rebuild again"}'
      WHERE status = 'running'`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_next CASCADE`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_verify CASCADE`);
    await q.query(`
      ALTER TABLE read_model.transactions
        ADD COLUMN snapshot_is_upgraded        boolean,
        ADD COLUMN snapshot_cancelation_reason text`);
    // Shown columns unchanged: no row's change position moves.
    await q.query(`UPDATE read_model.transactions SET snapshot_is_upgraded = is_upgraded, snapshot_cancelation_reason = cancelation_reason`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE read_model.transactions DROP COLUMN snapshot_is_upgraded, DROP COLUMN snapshot_cancelation_reason`);
  }
}
