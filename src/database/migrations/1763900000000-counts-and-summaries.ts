import { MigrationInterface, QueryRunner } from 'typeorm';
import { customerSummarySql } from '../../projection/customer-summary.sql.js';

/**
 * Exact row counts per application and UTC day (for paging totals and to jump to deep skips) and
 * the customer summary kept on each customer row (a customers page is then one indexed read).
 * Both are maintained by the projection in the batch transaction; existing rows are backfilled.
 */
export class CountsAndSummaries1763900000000 implements MigrationInterface {
  name = 'CountsAndSummaries1763900000000';

  async up(q: QueryRunner): Promise<void> {
    for (const table of ['transaction_day_counts', 'customer_day_counts']) {
      await q.query(`
        CREATE TABLE read_model.${table} (
          app_id text   NOT NULL,
          day    date   NOT NULL,
          n      bigint NOT NULL,
          PRIMARY KEY (app_id, day)
        )`);
    }
    await q.query(`
      ALTER TABLE read_model.customers
        ADD COLUMN receipt_ids        text[]      NOT NULL DEFAULT '{}',
        ADD COLUMN transaction_count  integer     NOT NULL DEFAULT 0,
        ADD COLUMN last_purchase_date timestamptz,
        ADD COLUMN expiration_date    timestamptz,
        ADD COLUMN last_renewal_date  timestamptz,
        ADD COLUMN renewal_intent     text,
        ADD COLUMN active_until       timestamptz`);
    await q.query(`
      INSERT INTO read_model.transaction_day_counts
      SELECT app_id, (occurred_at AT TIME ZONE 'UTC')::date, count(*) FROM read_model.transactions GROUP BY 1, 2`);
    await q.query(`
      INSERT INTO read_model.customer_day_counts
      SELECT app_id, (first_seen_at AT TIME ZONE 'UTC')::date, count(*) FROM read_model.customers GROUP BY 1, 2`);
    await q.query(customerSummarySql('read_model').refreshAll);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE read_model.transaction_day_counts`);
    await q.query(`DROP TABLE read_model.customer_day_counts`);
    await q.query(`
      ALTER TABLE read_model.customers DROP COLUMN receipt_ids, DROP COLUMN transaction_count,
        DROP COLUMN last_purchase_date, DROP COLUMN expiration_date, DROP COLUMN last_renewal_date,
        DROP COLUMN renewal_intent, DROP COLUMN active_until`);
  }
}
