import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Kept counts that place the pages of every filter with an expiry bound (issue 24, docs/api.md "How
 * the pages stay fast"): customer_filter_counts' cells (customers per application, access-end UTC
 * day, grace-start UTC day, billing retry, product, intent) split by first-seen UTC week (from
 * Monday), which replace them. Keyed by the access end first: a bound reads one range of it. The
 * customers on a bound's day and in a page's start week are counted on indexes alone:
 * customers_access_end_idx carries first_seen_at and customers_page_idx expiration_date. Frozen SQL.
 */
export class CustomerEndWeeks1766000000000 implements MigrationInterface {
  name = 'CustomerEndWeeks1766000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('SET LOCAL statement_timeout = 0');
    // A generation being built has the old shape; it would be switched in without the new table.
    await q.query(`
      UPDATE public.rebuilds SET status = 'aborted', finished_at = now(),
             report = '{"reason": "read-model schema upgraded (migration CustomerEndWeeks1766000000000); start the rebuild again"}'
      WHERE status = 'running'`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_next CASCADE`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_verify CASCADE`);
    await q.query(`
      CREATE TABLE read_model.customer_end_weeks (
        app_id         text    NOT NULL,
        end_day        date    NOT NULL,
        first_week     date    NOT NULL,
        product_id     text    NOT NULL,
        renewal_intent text    NOT NULL,
        grace_day      date    NOT NULL,
        billing_retry  boolean NOT NULL,
        n              bigint  NOT NULL,
        PRIMARY KEY (app_id, end_day, first_week, product_id, renewal_intent, grace_day, billing_retry)
      )`);
    await q.query(`
      INSERT INTO read_model.customer_end_weeks (app_id, end_day, first_week, product_id, renewal_intent, grace_day, billing_retry, n)
      SELECT app_id, coalesce((expiration_date AT TIME ZONE 'UTC')::date, '-infinity'), date_trunc('week', first_seen_at AT TIME ZONE 'UTC')::date,
             coalesce(current_product_id, ''), coalesce(renewal_intent, ''), coalesce((grace_from AT TIME ZONE 'UTC')::date, 'infinity'), billing_retry, count(*)
      FROM read_model.customers GROUP BY 1, 2, 3, 4, 5, 6, 7`);
    await q.query(`DROP TABLE read_model.customer_filter_counts`);
    await q.query(`DROP INDEX read_model.customers_access_end_idx`);
    await q.query(`CREATE INDEX customers_access_end_idx ON read_model.customers (app_id, expiration_date) INCLUDE (first_seen_at)`);
    await q.query(`DROP INDEX read_model.customers_page_idx`);
    await q.query(`CREATE INDEX customers_page_idx ON read_model.customers (app_id, first_seen_at, application_username) INCLUDE (expiration_date)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      UPDATE public.rebuilds SET status = 'aborted', finished_at = now(),
             report = '{"reason": "read-model schema downgraded (migration CustomerEndWeeks1766000000000); start the rebuild again"}'
      WHERE status = 'running'`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_next CASCADE`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_verify CASCADE`);
    await q.query(`DROP INDEX read_model.customers_page_idx`);
    await q.query(`CREATE INDEX customers_page_idx ON read_model.customers (app_id, first_seen_at, application_username)`);
    await q.query(`DROP INDEX read_model.customers_access_end_idx`);
    await q.query(`CREATE INDEX customers_access_end_idx ON read_model.customers (app_id, expiration_date)`);
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
      SELECT app_id, end_day, product_id, renewal_intent, grace_day, billing_retry, sum(n) FROM read_model.customer_end_weeks GROUP BY 1, 2, 3, 4, 5, 6`);
    await q.query(`DROP TABLE read_model.customer_end_weeks`);
  }
}
