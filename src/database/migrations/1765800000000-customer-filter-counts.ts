import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Kept counts for the customer filters' totals (issue 24, docs/api.md "Customer filters"): exact
 * customers per application and (current product, renewal intent, UTC day of the access end, UTC
 * day grace starts, billing retried), the values the filters read. A status at an instant is a
 * range of access end (and grace start) around it, so a total is a sum over these cells, with the
 * customers whose access ends or grace starts on the instant's own day (and on a day an expiry
 * bound cuts) counted on their rows. No access end is '-infinity' (status none); no grace,
 * 'infinity'. The partial index finds the customers whose grace starts on a given day.
 * Frozen SQL.
 */
export class CustomerFilterCounts1765800000000 implements MigrationInterface {
  name = 'CustomerFilterCounts1765800000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('SET LOCAL statement_timeout = 0');
    // A generation being built has the old shape; it would be switched in without the new table.
    await q.query(`
      UPDATE public.rebuilds SET status = 'aborted', finished_at = now(),
             report = '{"reason": "read-model schema upgraded (migration CustomerFilterCounts1765800000000); start the rebuild again"}'
      WHERE status = 'running'`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_next CASCADE`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_verify CASCADE`);
    await q.query(`
      CREATE TABLE read_model.customer_filter_counts (
        app_id         text    NOT NULL,
        end_day        date    NOT NULL,
        product_id     text    NOT NULL,
        renewal_intent text    NOT NULL,
        grace_day      date    NOT NULL,
        billing_retry  boolean NOT NULL,
        n              bigint  NOT NULL,
        PRIMARY KEY (app_id, end_day, product_id, renewal_intent, grace_day, billing_retry)
      )`);
    await q.query(`
      INSERT INTO read_model.customer_filter_counts (app_id, end_day, product_id, renewal_intent, grace_day, billing_retry, n)
      SELECT app_id, coalesce((expiration_date AT TIME ZONE 'UTC')::date, '-infinity'), coalesce(current_product_id, ''),
             coalesce(renewal_intent, ''), coalesce((grace_from AT TIME ZONE 'UTC')::date, 'infinity'), billing_retry, count(*)
      FROM read_model.customers GROUP BY 1, 2, 3, 4, 5, 6`);
    await q.query(`CREATE INDEX customers_grace_idx ON read_model.customers (app_id, grace_from) WHERE grace_from IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX read_model.customers_grace_idx`);
    await q.query(`DROP TABLE read_model.customer_filter_counts`);
  }
}
