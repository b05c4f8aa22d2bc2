import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Customer status and filters (issue 24, docs/api.md "Filters"): the customer summary also keeps the
 * current subscription's product, the instant from which its access lasts only by a store grace
 * period (grace_from) and whether the store still retries billing it (billing_retry), so a status is
 * a range condition on the request's instant over stored columns. Indexes per app for the filters.
 *
 * Existing rows are filled by an approximation (frozen here): the owned, non-pending transaction
 * whose access end is the stored expiration_date, else the latest charged one. `rebuild` makes them
 * exact (docs/api.md, "Upgrading an existing database"); the projection writes them exactly from now on.
 */
export class CustomerStatus1765300000000 implements MigrationInterface {
  name = 'CustomerStatus1765300000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('SET LOCAL statement_timeout = 0');
    // A generation being built has the old shape; it would be switched in without the new columns.
    await q.query(`
      UPDATE public.rebuilds SET status = 'aborted', finished_at = now(),
             report = '{"reason": "read-model schema upgraded (migration CustomerStatus1765300000000); start the rebuild again"}'
      WHERE status = 'running'`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_next CASCADE`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_verify CASCADE`);
    await q.query(`
      ALTER TABLE read_model.customers
        ADD COLUMN current_product_id text,
        ADD COLUMN grace_from         timestamptz,
        ADD COLUMN billing_retry      boolean NOT NULL DEFAULT false`);
    await q.query(`
      UPDATE read_model.customers c SET
        current_product_id = f.product_id,
        grace_from = CASE WHEN f.is_upgraded IS NOT TRUE AND f.revocation_date IS NULL AND f.is_expired IS NOT TRUE
                           AND f.is_billing_retry_period AND f.grace_period_expiration_date > f.expiration_date
                          THEN f.expiration_date END,
        billing_retry = coalesce(f.is_billing_retry_period AND f.revocation_date IS NULL AND f.is_upgraded IS NOT TRUE, false)
      FROM (
        SELECT DISTINCT ON (k.app_id, k.application_username) k.app_id, k.application_username,
               t.product_id, t.expiration_date, t.grace_period_expiration_date, t.revocation_date,
               t.is_upgraded, t.is_expired, t.is_billing_retry_period
        FROM read_model.customers k
        JOIN read_model.receipts r ON r.app_id = k.app_id AND r.application_username = k.application_username
        JOIN read_model.transactions t ON t.app_id = r.app_id AND t.receipt_id = r.receipt_id
        WHERE k.expiration_date IS NOT NULL AND t.is_pending IS NOT TRUE AND t.expiration_date IS NOT NULL
        ORDER BY k.app_id, k.application_username,
                 (k.expiration_date IN (t.expiration_date, t.revocation_date, t.grace_period_expiration_date)) IS TRUE DESC,
                 t.is_upgraded IS TRUE, t.occurred_at DESC, t.transaction_id COLLATE "C" DESC
      ) f
      WHERE c.app_id = f.app_id AND c.application_username = f.application_username`);
    await q.query(`CREATE INDEX customers_access_end_idx ON read_model.customers (app_id, expiration_date)`);
    await q.query(`CREATE INDEX customers_product_idx ON read_model.customers (app_id, current_product_id, expiration_date)`);
    await q.query(`CREATE INDEX transactions_purchase_idx ON read_model.transactions (app_id, purchase_id)`);
    await q.query(`CREATE INDEX transactions_product_idx ON read_model.transactions (app_id, product_id, occurred_at, transaction_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX read_model.transactions_product_idx`);
    await q.query(`DROP INDEX read_model.transactions_purchase_idx`);
    await q.query(`DROP INDEX read_model.customers_product_idx`);
    await q.query(`DROP INDEX read_model.customers_access_end_idx`);
    await q.query(`ALTER TABLE read_model.customers DROP COLUMN current_product_id, DROP COLUMN grace_from, DROP COLUMN billing_retry`);
  }
}
