import { MigrationInterface, QueryRunner } from 'typeorm';

// The summary rules as they stood when this migration was written; migration 1764000000000
// re-derives every summary with the current rules (summarizeCustomer).
const facts = (schema: string, key: string) => `
  SELECT coalesce((SELECT array_agg(r.receipt_id ORDER BY r.receipt_id) FROM ${schema}.receipts r
                   WHERE r.app_id = ${key}.app_id AND r.application_username = ${key}.application_username), '{}') AS receipt_ids,
         a.transaction_count, a.last_purchase_date, a.active_until,
         l.expiration_date, l.last_renewal_date, l.renewal_intent
  FROM (SELECT count(*)::int AS transaction_count, max(t.purchase_date) AS last_purchase_date,
               max(t.expiration_date) FILTER (WHERE t.is_expired IS NOT TRUE) AS active_until
        FROM ${schema}.receipts rc JOIN ${schema}.transactions t ON t.app_id = rc.app_id AND t.receipt_id = rc.receipt_id
        WHERE rc.app_id = ${key}.app_id AND rc.application_username = ${key}.application_username) a
  LEFT JOIN LATERAL (
        SELECT t.expiration_date, t.last_renewal_date, t.renewal_intent
        FROM ${schema}.receipts rc JOIN ${schema}.transactions t ON t.app_id = rc.app_id AND t.receipt_id = rc.receipt_id
        WHERE rc.app_id = ${key}.app_id AND rc.application_username = ${key}.application_username AND t.expiration_date IS NOT NULL
        ORDER BY t.expiration_date DESC, t.transaction_id DESC LIMIT 1) l ON true`;

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
    await q.query(`
      UPDATE read_model.customers c SET
        receipt_ids = f.receipt_ids, transaction_count = f.transaction_count, last_purchase_date = f.last_purchase_date,
        active_until = f.active_until, expiration_date = f.expiration_date, last_renewal_date = f.last_renewal_date,
        renewal_intent = f.renewal_intent
      FROM read_model.customers k CROSS JOIN LATERAL (${facts('read_model', 'k')}) f
      WHERE c.app_id = k.app_id AND c.application_username = k.application_username`);
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
