import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Provenance (issue 44, docs/api.md "Provenance"): read_model.transactions.state_event_id,
 * state_source and state_received_at name the event that made a row say what it says (its id, its
 * CloudEvents source, when the log received it); they are shown, so the change-stamping trigger
 * counts them. snapshot_digest keeps the content digest of the stored snapshot, so a newer event
 * saying the same is known as such without reading the row whole. Rows written before this release
 * have none of them until an event changes them or a rebuild reads the log again. Frozen SQL.
 */
const TRANSACTION_COLUMNS = [
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
  'offer_type',
  'offer_discount_type',
  'offer_period',
  'ownership_type',
  'revocation_type',
  'refunded_share',
];
const PROVENANCE_COLUMNS = ['state_event_id', 'state_source', 'state_received_at'];

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

export class Provenance1766350000000 implements MigrationInterface {
  name = 'Provenance1766350000000';

  async up(q: QueryRunner): Promise<void> {
    // A generation being built has the old shape; it would be switched in without the new columns.
    await q.query(`
      UPDATE public.rebuilds SET status = 'aborted', finished_at = now(),
             report = '{"reason": "read-model schema upgraded (migration Provenance1766350000000); start the rebuild again"}'
      WHERE status = 'running'`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_next CASCADE`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_verify CASCADE`);
    await q.query(`
      ALTER TABLE read_model.transactions
        ADD COLUMN snapshot_digest text, ADD COLUMN state_event_id text, ADD COLUMN state_source text, ADD COLUMN state_received_at timestamptz`);
    await q.query(stampFunction([...TRANSACTION_COLUMNS, ...PROVENANCE_COLUMNS]));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(stampFunction(TRANSACTION_COLUMNS));
    await q.query(`
      ALTER TABLE read_model.transactions
        DROP COLUMN snapshot_digest, DROP COLUMN state_event_id, DROP COLUMN state_source, DROP COLUMN state_received_at`);
  }
}
