import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Offers and Family Sharing on transactions (issue 21, "current with the stores"): offer_type
 * (INTRODUCTORY, PROMOTIONAL, OFFER_CODE, WIN_BACK), offer_discount_type, offer_period and
 * ownership_type (PURCHASED, FAMILY_SHARED), shown on /v2/transactions. Existing rows hold NULL until
 * their transaction's next snapshot, or at once after `rebuild` (the log kept Apple's fields only
 * where the events carried them: events published before this release did not).
 *
 * Frozen: the change-position trigger function is written out here with the shown columns as of
 * this migration, not built from today's list (src/change-feed/change-positions.sql.ts).
 */
const SHOWN = [
  'receipt_id',
  'purchase_id',
  'product_id',
  'platform',
  'sandbox',
  'purchase_date',
  'last_renewal_date',
  'renewal_date',
  'expiration_date',
  'renewal_intent',
  'renewal_intent_change_date',
  'cancelation_reason',
  'is_pending',
  'is_acknowledged',
  'is_consumed',
  'is_billing_retry_period',
  'is_trial_period',
  'is_intro_period',
  'is_expired',
  'grace_period_expiration_date',
  'revocation_date',
  'is_upgraded',
  'price_consent_status',
  'discount_id',
  'quantity',
  'amount_usd',
  'amount_micros',
  'currency',
];
const ADDED = ['offer_type', 'offer_discount_type', 'offer_period', 'ownership_type'];

const stampFunction = (columns: string[]) => {
  const row = (alias: string) => `(${columns.map((c) => `${alias}.${c}`).join(', ')})`;
  return `
    CREATE OR REPLACE FUNCTION public.stamp_transactions_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_ARGV[0] = 'live' THEN
        IF TG_OP = 'UPDATE' AND ${row('NEW')} IS NOT DISTINCT FROM ${row('OLD')} THEN
          RETURN NEW;
        END IF;
        NEW.change_position := pg_current_xact_id()::text::bigint;
      ELSIF TG_ARGV[0] = 'generation' THEN
        NEW.change_position := (
          SELECT l.change_position FROM read_model.transactions l
          WHERE l.app_id = NEW.app_id AND l.transaction_id = NEW.transaction_id AND ${row('l')} IS NOT DISTINCT FROM ${row('NEW')});
      ELSE
        NEW.change_position := NULL;
      END IF;
      RETURN NEW;
    END $$`;
};

export class OffersAndOwnership1765000000000 implements MigrationInterface {
  name = 'OffersAndOwnership1765000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('SET LOCAL statement_timeout = 0');
    // A generation being built has the old shape; it would be switched in without the new columns.
    await q.query(`
      UPDATE public.rebuilds SET status = 'aborted', finished_at = now(),
             report = '{"reason": "read-model schema upgraded (migration OffersAndOwnership1765000000000); start the rebuild again"}'
      WHERE status = 'running'`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_next CASCADE`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_verify CASCADE`);
    // Nullable, no default: PostgreSQL adds them without rewriting the table.
    await q.query(`ALTER TABLE read_model.transactions ${ADDED.map((c) => `ADD COLUMN ${c} text`).join(', ')}`);
    await q.query(stampFunction([...SHOWN, ...ADDED]));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(stampFunction(SHOWN));
    await q.query(`ALTER TABLE read_model.transactions ${ADDED.map((c) => `DROP COLUMN ${c}`).join(', ')}`);
  }
}
