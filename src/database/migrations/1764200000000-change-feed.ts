import { MigrationInterface, QueryRunner } from 'typeorm';

// As of this migration, frozen (a migration imports nothing from src/: later releases change it).
const CURRENT_XID = 'pg_current_xact_id()::text::bigint';
const FEED_TABLES = ['customers', 'transactions'] as const;
const KEY_COLUMN = { customers: 'application_username', transactions: 'transaction_id' } as const;

/**
 * The shown columns as of this migration, frozen: the trigger function it installs must not name
 * columns later migrations add (1765000000000 added offers and ownership and rewrote the function),
 * or upgrading an old database would fail in the steps between, on the first row a trigger stamps.
 */
const SHOWN_THEN: Record<string, string[]> = {
  customers: ['receipt_ids', 'transaction_count', 'last_purchase_date', 'expiration_date', 'last_renewal_date', 'renewal_intent'],
  transactions: [
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
  ],
};

function stampFunctionSql(table: 'customers' | 'transactions'): string {
  const key = KEY_COLUMN[table];
  const row = (alias: string) => `(${SHOWN_THEN[table].map((c) => `${alias}.${c}`).join(', ')})`;
  return `
    CREATE OR REPLACE FUNCTION public.stamp_${table}_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_ARGV[0] = 'live' THEN
        IF TG_OP = 'UPDATE' AND ${row('NEW')} IS NOT DISTINCT FROM ${row('OLD')} THEN
          RETURN NEW;
        END IF;
        NEW.change_position := ${CURRENT_XID};
      ELSIF TG_ARGV[0] = 'generation' THEN
        NEW.change_position := (
          SELECT l.change_position FROM read_model.${table} l
          WHERE l.app_id = NEW.app_id AND l.${key} = NEW.${key} AND ${row('l')} IS NOT DISTINCT FROM ${row('NEW')});
      ELSE
        NEW.change_position := NULL;
      END IF;
      RETURN NEW;
    END $$`;
}

/**
 * Change positions on customer and transaction rows for the change feed (`changedAfter`, webhooks).
 * Every existing row is stamped with this migration's position: a client starting from 0 gets all.
 */
export class ChangeFeed1764200000000 implements MigrationInterface {
  name = 'ChangeFeed1764200000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('SET LOCAL statement_timeout = 0');
    // A generation being built has no change positions; it would be switched in without them.
    await q.query(`
      UPDATE public.rebuilds SET status = 'aborted', finished_at = now(),
             report = '{"reason": "read-model schema upgraded (migration ChangeFeed1764200000000); start the rebuild again"}'
      WHERE status = 'running'`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_next CASCADE`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_verify CASCADE`);
    await q.query(`ALTER TABLE public.rebuilds ADD COLUMN changes_from bigint`);

    for (const table of FEED_TABLES) {
      await q.query(`ALTER TABLE read_model.${table} ADD COLUMN change_position bigint`);
      await q.query(`UPDATE read_model.${table} SET change_position = ${CURRENT_XID}`);
      await q.query(`CREATE INDEX ${table}_changes_idx ON read_model.${table} (app_id, change_position, ${KEY_COLUMN[table]})`);
      // Always empty in read_model; in a generation it finds the rows to stamp at the switch.
      await q.query(`CREATE INDEX ${table}_unstamped_idx ON read_model.${table} (app_id) WHERE change_position IS NULL`);
      await q.query(stampFunctionSql(table));
      await q.query(`
        CREATE TRIGGER stamp_change BEFORE INSERT OR UPDATE ON read_model.${table}
        FOR EACH ROW EXECUTE FUNCTION public.stamp_${table}_change('live')`);
    }
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of FEED_TABLES) {
      await q.query(`DROP TRIGGER IF EXISTS stamp_change ON read_model.${table}`);
      await q.query(`DROP FUNCTION public.stamp_${table}_change()`);
      await q.query(`ALTER TABLE read_model.${table} DROP COLUMN change_position`);
    }
    await q.query(`ALTER TABLE public.rebuilds DROP COLUMN changes_from`);
  }
}
