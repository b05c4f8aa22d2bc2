import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Statuses are decided at read time (issue 40): the filtered customer pages are all placed by
 * customer_end_weeks, which holds facts (access-end and grace-start days), not a status at a
 * watermark, so the counts by status and the watermarks a sweep moved go. The customers a request
 * counts or walks on their rows (those on the instant's day, a page's start week, the page's keys)
 * are decided on the indexes alone: the three indexes it reads carry every column a filter reads.
 * Frozen SQL.
 */
export class StatusAtRead1766100000000 implements MigrationInterface {
  name = 'StatusAtRead1766100000000';

  async up(q: QueryRunner): Promise<void> {
    // A generation being built has the old shape; switched in, it would bring the tables back.
    await q.query(`
      UPDATE public.rebuilds SET status = 'aborted', finished_at = now(),
             report = '{"reason": "read-model schema upgraded (migration StatusAtRead1766100000000); start the rebuild again"}'
      WHERE status = 'running'`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_next CASCADE`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_verify CASCADE`);
    await q.query(`DROP TABLE read_model.customer_status_days`);
    await q.query(`DROP TABLE read_model.customer_status_watermarks`);
    await q.query('SET LOCAL statement_timeout = 0');
    const filtered = 'grace_from, billing_retry, renewal_intent, current_product_id';
    await q.query(`DROP INDEX read_model.customers_page_idx`);
    await q.query(
      `CREATE INDEX customers_page_idx ON read_model.customers (app_id, first_seen_at, application_username) INCLUDE (expiration_date, ${filtered})`,
    );
    await q.query(`DROP INDEX read_model.customers_access_end_idx`);
    await q.query(`CREATE INDEX customers_access_end_idx ON read_model.customers (app_id, expiration_date) INCLUDE (first_seen_at, ${filtered})`);
    await q.query(`DROP INDEX read_model.customers_grace_idx`);
    await q.query(
      `CREATE INDEX customers_grace_idx ON read_model.customers (app_id, grace_from) INCLUDE (first_seen_at, expiration_date, billing_retry, renewal_intent, current_product_id) WHERE grace_from IS NOT NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('SET LOCAL statement_timeout = 0');
    await q.query(`
      UPDATE public.rebuilds SET status = 'aborted', finished_at = now(),
             report = '{"reason": "read-model schema downgraded (migration StatusAtRead1766100000000); start the rebuild again"}'
      WHERE status = 'running'`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_next CASCADE`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_verify CASCADE`);
    await q.query(`DROP INDEX read_model.customers_grace_idx`);
    await q.query(`CREATE INDEX customers_grace_idx ON read_model.customers (app_id, grace_from) WHERE grace_from IS NOT NULL`);
    await q.query(`DROP INDEX read_model.customers_access_end_idx`);
    await q.query(`CREATE INDEX customers_access_end_idx ON read_model.customers (app_id, expiration_date) INCLUDE (first_seen_at)`);
    await q.query(`DROP INDEX read_model.customers_page_idx`);
    await q.query(`CREATE INDEX customers_page_idx ON read_model.customers (app_id, first_seen_at, application_username) INCLUDE (expiration_date)`);
    await q.query(`CREATE TABLE read_model.customer_status_watermarks (app_id text PRIMARY KEY, at timestamptz NOT NULL)`);
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
  }
}
