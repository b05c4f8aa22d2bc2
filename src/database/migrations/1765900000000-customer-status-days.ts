import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Kept counts for the filtered customer pages (issue 24, docs/api.md "How the pages stay fast"):
 * customers per application, first-seen UTC day (the listing's order), status at the application's
 * watermark, product and intent. A sweep moves the watermark and the customers whose status changed
 * since; a reader adds those that changed between the watermark and its instant.
 * customers_product_idx now follows the listing's order within a product. Frozen SQL.
 */
export class CustomerStatusDays1765900000000 implements MigrationInterface {
  name = 'CustomerStatusDays1765900000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('SET LOCAL statement_timeout = 0');
    // A generation being built has the old shape; it would be switched in without the new tables.
    await q.query(`
      UPDATE public.rebuilds SET status = 'aborted', finished_at = now(),
             report = '{"reason": "read-model schema upgraded (migration CustomerStatusDays1765900000000); start the rebuild again"}'
      WHERE status = 'running'`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_next CASCADE`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_verify CASCADE`);
    await q.query(`
      CREATE TABLE read_model.customer_status_watermarks (
        app_id text        PRIMARY KEY,
        at     timestamptz NOT NULL
      )`);
    await q.query(`
      CREATE TABLE read_model.customer_status_days (
        app_id         text   NOT NULL,
        first_day      date   NOT NULL,
        status         text   NOT NULL,
        product_id     text   NOT NULL,
        renewal_intent text   NOT NULL,
        n              bigint NOT NULL,
        PRIMARY KEY (app_id, status, first_day, product_id, renewal_intent)
      )`);
    await q.query(`INSERT INTO read_model.customer_status_watermarks (app_id, at) SELECT DISTINCT app_id, now() FROM read_model.customers`);
    await q.query(`
      INSERT INTO read_model.customer_status_days (app_id, first_day, status, product_id, renewal_intent, n)
      SELECT app_id, (first_seen_at AT TIME ZONE 'UTC')::date,
             CASE WHEN expiration_date IS NULL THEN 'none'
                  WHEN expiration_date > now() THEN (CASE WHEN grace_from <= now() THEN 'grace_period' ELSE 'active' END)
                  WHEN billing_retry THEN 'billing_retry' ELSE 'expired' END,
             coalesce(current_product_id, ''), coalesce(renewal_intent, ''), count(*)
      FROM read_model.customers GROUP BY 1, 2, 3, 4, 5`);
    // A product's page is read a first-seen day at a time: the index now follows the listing's order.
    await q.query(`DROP INDEX read_model.customers_product_idx`);
    await q.query(`CREATE INDEX customers_product_idx ON read_model.customers (app_id, current_product_id, first_seen_at, application_username)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX read_model.customers_product_idx`);
    await q.query(`CREATE INDEX customers_product_idx ON read_model.customers (app_id, current_product_id, expiration_date)`);
    await q.query(`DROP TABLE read_model.customer_status_days`);
    await q.query(`DROP TABLE read_model.customer_status_watermarks`);
  }
}
