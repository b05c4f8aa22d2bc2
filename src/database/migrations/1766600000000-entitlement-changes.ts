import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Entitlement changes reach copies (docs/change-feed.md, issue 42): read_model.customers keeps
 * grants_digest, the sum of what its entitlements read of each transaction it owns hashed
 * (src/customers/customer-entitlements.ts, grantsDigest), and the change-stamping trigger counts a
 * change of it as a change of the customer, so a refund of a subscription other than the current
 * one moves the customer in the change feed and sends customer.updated. Null is not known (rows
 * from before this migration): filling it in is no change, so the re-derivation below moves nobody. Frozen SQL.
 */
const SHOWN = ['receipt_ids', 'transaction_count', 'last_purchase_date', 'expiration_date', 'last_renewal_date', 'renewal_intent'];

const stampFunction = (withDigest: boolean) => {
  const same = (a: string, b: string) => {
    const shown = `(${SHOWN.map((c) => `${a}.${c}`).join(', ')}) IS NOT DISTINCT FROM (${SHOWN.map((c) => `${b}.${c}`).join(', ')})`;
    return withDigest ? `(${shown} AND (${a}.grants_digest IS NULL OR ${b}.grants_digest IS NULL OR ${a}.grants_digest = ${b}.grants_digest))` : shown;
  };
  return `
    CREATE OR REPLACE FUNCTION public.stamp_customers_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_ARGV[0] = 'live' THEN
        IF TG_OP = 'UPDATE' AND ${same('NEW', 'OLD')} THEN
          RETURN NEW;
        END IF;
        NEW.change_position := pg_current_xact_id()::text::bigint;
      ELSIF TG_ARGV[0] = 'generation' THEN
        NEW.change_position := (
          SELECT l.change_position FROM read_model.customers l
          WHERE l.app_id = NEW.app_id AND l.application_username = NEW.application_username AND ${same('l', 'NEW')});
      ELSE
        NEW.change_position := NULL;
      END IF;
      RETURN NEW;
    END $$`;
};

export class EntitlementChanges1766600000000 implements MigrationInterface {
  name = 'EntitlementChanges1766600000000';

  async up(q: QueryRunner): Promise<void> {
    // A generation being built has the old shape; it would be switched in without the new column.
    await q.query(`
      UPDATE public.rebuilds SET status = 'aborted', finished_at = now(),
             report = '{"reason": "read-model schema upgraded (migration EntitlementChanges1766600000000); start the rebuild again"}'
      WHERE status = 'running'`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_next CASCADE`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_verify CASCADE`);
    // rows from before are not known (null) until the re-derivation; a new customer owns nothing yet: 0, the empty sum
    await q.query(`ALTER TABLE read_model.customers ADD COLUMN grants_digest bigint`);
    await q.query(`ALTER TABLE read_model.customers ALTER COLUMN grants_digest SET DEFAULT 0`);
    await q.query(stampFunction(true));
    await q.query(`INSERT INTO public.pending_rederivations VALUES ('customer_summaries', $1) ON CONFLICT DO NOTHING`, [this.name]);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(stampFunction(false));
    await q.query(`ALTER TABLE read_model.customers DROP COLUMN grants_digest`);
  }
}
