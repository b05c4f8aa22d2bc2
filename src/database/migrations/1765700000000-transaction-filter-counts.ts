import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Kept counts for the transaction filters (issue 24, docs/api.md "Transaction filters"): exact
 * transactions per application, UTC day of occurred_at and (product, platform, sandbox), so a
 * filtered total is a sum over days and a filtered page starts from a running sum, as the unfiltered
 * listing does with transaction_day_counts. sandbox is stored as the filter reads it: true, or false
 * for every row not marked sandbox.
 *
 * The page index also carries platform and sandbox, so a page filtered on them walks the index
 * alone (an index-only scan) from the day the counts say it starts in; a product has its own index.
 * Frozen SQL.
 */
export class TransactionFilterCounts1765700000000 implements MigrationInterface {
  name = 'TransactionFilterCounts1765700000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('SET LOCAL statement_timeout = 0');
    // A generation being built has the old shape; it would be switched in without the new table.
    await q.query(`
      UPDATE public.rebuilds SET status = 'aborted', finished_at = now(),
             report = '{"reason": "read-model schema upgraded (migration TransactionFilterCounts1765700000000); start the rebuild again"}'
      WHERE status = 'running'`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_next CASCADE`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_verify CASCADE`);
    await q.query(`
      CREATE TABLE read_model.transaction_filter_day_counts (
        app_id     text    NOT NULL,
        product_id text    NOT NULL,
        platform   text    NOT NULL,
        sandbox    boolean NOT NULL,
        day        date    NOT NULL,
        n          bigint  NOT NULL,
        PRIMARY KEY (app_id, product_id, platform, sandbox, day)
      )`);
    await q.query(`
      INSERT INTO read_model.transaction_filter_day_counts (app_id, product_id, platform, sandbox, day, n)
      SELECT app_id, product_id, platform, sandbox IS TRUE, (occurred_at AT TIME ZONE 'UTC')::date, count(*)
      FROM read_model.transactions GROUP BY 1, 2, 3, 4, 5`);
    await q.query(`DROP INDEX read_model.transactions_page_idx`);
    await q.query(`CREATE INDEX transactions_page_idx ON read_model.transactions (app_id, occurred_at, transaction_id) INCLUDE (platform, sandbox)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX read_model.transactions_page_idx`);
    await q.query(`CREATE INDEX transactions_page_idx ON read_model.transactions (app_id, occurred_at, transaction_id)`);
    await q.query(`DROP TABLE read_model.transaction_filter_day_counts`);
  }
}
