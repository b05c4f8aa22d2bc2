import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The store-lifecycle rules (docs/api.md): grace periods, revocations and replacements on
 * transactions; transactions filed at the date they were charged; receipt links that remember
 * whether a receipt.linked made them; summaries derived by summarizeCustomer. Existing rows are
 * re-derived here from what they store. Two facts older rows never kept are approximated: the time
 * of a transaction's first event (its earliest known date) and where a receipt link came from
 * (taken as a receipt.linked). A `rebuild` afterwards makes both exact (docs/operations.md).
 */
export class LifecycleRules1764000000000 implements MigrationInterface {
  name = 'LifecycleRules1764000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('SET LOCAL statement_timeout = 0');
    // A generation being built has the old shape; it would be switched in without the new columns.
    await q.query(`
      UPDATE public.rebuilds SET status = 'aborted', finished_at = now(),
             report = '{"reason": "read-model schema upgraded (migration LifecycleRules1764000000000); start the rebuild again"}'
      WHERE status = 'running'`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_next CASCADE`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_verify CASCADE`);

    await q.query(`
      ALTER TABLE read_model.transactions
        ADD COLUMN grace_period_expiration_date timestamptz,
        ADD COLUMN revocation_date              timestamptz,
        ADD COLUMN is_upgraded                  boolean,
        ADD COLUMN first_event_at               timestamptz`);
    await q.query(`UPDATE read_model.transactions SET first_event_at = LEAST(occurred_at, version_time)`);
    await q.query(`ALTER TABLE read_model.transactions ALTER COLUMN first_event_at SET NOT NULL`);
    await q.query(`UPDATE read_model.transactions SET occurred_at = coalesce(last_renewal_date, renewal_date, purchase_date, first_event_at)`);
    await q.query(`DELETE FROM read_model.transaction_day_counts`);
    await q.query(`
      INSERT INTO read_model.transaction_day_counts
      SELECT app_id, (occurred_at AT TIME ZONE 'UTC')::date, count(*) FROM read_model.transactions GROUP BY 1, 2`);

    await q.query(`ALTER TABLE read_model.receipts ADD COLUMN explicit boolean NOT NULL DEFAULT true`);
    await q.query(`ALTER TABLE read_model.customers DROP COLUMN active_until`);
    // Summaries are re-derived by summarizeCustomer, whose code moves on after this release: asked
    // for here, done once every migration has run, by the code of that day on the schema of that
    // day (src/database/migrate.ts). Frozen SQL only in this step.
    await q.query(`CREATE TABLE IF NOT EXISTS public.pending_rederivations (name text PRIMARY KEY, requested_by text NOT NULL)`);
    await q.query(`INSERT INTO public.pending_rederivations VALUES ('customer_summaries', $1) ON CONFLICT DO NOTHING`, [this.name]);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE read_model.customers ADD COLUMN active_until timestamptz`);
    await q.query(`UPDATE read_model.customers SET active_until = expiration_date`);
    await q.query(`ALTER TABLE read_model.receipts DROP COLUMN explicit`);
    await q.query(`
      ALTER TABLE read_model.transactions DROP COLUMN grace_period_expiration_date, DROP COLUMN revocation_date,
        DROP COLUMN is_upgraded, DROP COLUMN first_event_at`);
  }
}
