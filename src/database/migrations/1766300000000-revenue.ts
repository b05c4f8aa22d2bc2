import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Revenue in USD (issue 43, docs/revenue.md):
 * - public.fx_rates: the European Central Bank's reference rates, units of a currency per euro, per
 *   day. Reference data the operator loads (`fx import`), not a projection: a rebuild keeps it.
 * - public.usd_rate(code, day): USD per unit of a currency at the rate of the last business day at
 *   or before `day` (within 14 days); NULL when the source lacks the currency. public.usd_amount(micros,
 *   code, charged_at): an amount in USD at that rate, rounded to the cent. Evaluated when rows are
 *   read, so rates loaded later apply to old rows.
 * - read_model.transactions.revocation_type and refunded_share: a partial refund's facts (Apple's
 *   revocationType and revocationPercentage, Google's voided quantity over the quantity bought).
 * - read_model.revenue_day_sums: per application, UTC charge day, platform, product, currency and
 *   commission tier, the amounts and counts /v2/revenue adds up, kept by the projection; and
 *   read_model.revenue_month_usd, the same per month converted to USD, re-derived from them when they
 *   or the rates of their days change.
 * Frozen SQL.
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
];

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

const USD_RATE = `
      CREATE OR REPLACE FUNCTION public.usd_rate(code text, on_day date) RETURNS numeric LANGUAGE sql STABLE PARALLEL SAFE AS $$
        SELECT CASE
          WHEN code IS NULL OR on_day IS NULL THEN NULL
          WHEN code = 'USD' THEN 1
          ELSE (
            SELECT u.per_eur / CASE WHEN code = 'EUR' THEN 1 ELSE c.per_eur END
            FROM (SELECT r.day, r.per_eur FROM public.fx_rates r
                  WHERE r.currency = 'USD' AND r.day <= on_day AND r.day > on_day - 14
                  ORDER BY r.day DESC LIMIT 1) u
            LEFT JOIN public.fx_rates c ON c.currency = code AND c.day = u.day
            WHERE code = 'EUR' OR c.per_eur IS NOT NULL)
        END
      $$`;

const USD_AMOUNT = `
      CREATE OR REPLACE FUNCTION public.usd_amount(micros numeric, code text, charged_at timestamptz) RETURNS numeric LANGUAGE sql STABLE PARALLEL SAFE AS $$
        SELECT round(micros / 1000000 * public.usd_rate(code, (charged_at AT TIME ZONE 'UTC')::date), 2)
      $$`;

// The revenue cell of a transaction row `t`: the rule src/revenue/revenue-cell.ts declares, as of this release.
const REVENUE_CELL = `
  SELECT t.app_id, (coalesce(t.last_renewal_date, t.purchase_date, t.occurred_at) AT TIME ZONE 'UTC')::date AS day, t.platform, t.product_id,
         CASE WHEN t.amount_usd IS NULL AND t.amount_micros IS NOT NULL AND t.currency IS NOT NULL THEN t.currency ELSE '' END AS currency,
         (t.expiration_date IS NOT NULL AND t.purchase_date IS NOT NULL AND coalesce(t.last_renewal_date, t.purchase_date) >= t.purchase_date + interval '1 year') AS after_first_year,
         1 AS n,
         CASE WHEN t.amount_usd IS NULL AND (t.amount_micros IS NULL OR t.currency IS NULL) THEN 1 ELSE 0 END AS unpriced,
         CASE WHEN t.amount_usd IS NULL AND t.currency IS NOT NULL THEN coalesce(t.amount_micros, 0) ELSE 0 END::numeric AS gross_micros,
         coalesce(t.amount_usd, 0)::numeric AS gross_usd,
         CASE WHEN t.revocation_date IS NULL OR t.revocation_type = 'FAMILY_REVOKE' OR (t.snapshot_is_upgraded IS TRUE AND t.revocation_type IS NULL) THEN 0
              ELSE coalesce(t.refunded_share, 1) END AS refund_share
  FROM read_model.transactions t
  WHERE t.sandbox IS NOT TRUE AND t.is_pending IS NOT TRUE AND t.ownership_type IS DISTINCT FROM 'FAMILY_SHARED'`;

export class Revenue1766300000000 implements MigrationInterface {
  name = 'Revenue1766300000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('SET LOCAL statement_timeout = 0');
    // A generation being built has the old shape; it would be switched in without the new columns.
    await q.query(`
      UPDATE public.rebuilds SET status = 'aborted', finished_at = now(),
             report = '{"reason": "read-model schema upgraded (migration Revenue1766300000000); start the rebuild again"}'
      WHERE status = 'running'`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_next CASCADE`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_verify CASCADE`);
    await q.query(`
      CREATE TABLE public.fx_rates (
        currency text    NOT NULL CHECK (currency ~ '^[A-Z]{3}$' AND currency <> 'EUR'),
        day      date    NOT NULL,
        per_eur  numeric NOT NULL CHECK (per_eur > 0),
        PRIMARY KEY (currency, day)
      )`);
    await q.query(USD_RATE);
    await q.query(USD_AMOUNT);
    await q.query(`ALTER TABLE read_model.transactions ADD COLUMN revocation_type text, ADD COLUMN refunded_share numeric`);
    await q.query(stampFunction([...TRANSACTION_COLUMNS, 'revocation_type', 'refunded_share']));
    await q.query(`
      CREATE TABLE read_model.revenue_day_sums (
        app_id           text    NOT NULL,
        day              date    NOT NULL,
        platform         text    NOT NULL,
        product_id       text    NOT NULL,
        currency         text    NOT NULL,
        after_first_year boolean NOT NULL,
        n                bigint  NOT NULL,
        unpriced         bigint  NOT NULL,
        gross_micros     numeric NOT NULL,
        refunded_micros  numeric NOT NULL,
        gross_usd        numeric NOT NULL,
        refunded_usd     numeric NOT NULL,
        PRIMARY KEY (app_id, day, platform, product_id, currency, after_first_year)
      )`);
    // The same per month in USD (public.usd_rate), so a report over whole months reads a row per month, not one per day and currency
    await q.query(`
      CREATE TABLE read_model.revenue_month_usd (
        app_id           text    NOT NULL,
        month            date    NOT NULL,
        platform         text    NOT NULL,
        product_id       text    NOT NULL,
        after_first_year boolean NOT NULL,
        n                bigint  NOT NULL,
        unpriced         bigint  NOT NULL,
        unconverted      bigint  NOT NULL,
        gross_usd        numeric NOT NULL,
        refunds_usd      numeric NOT NULL,
        PRIMARY KEY (app_id, month, platform, product_id, after_first_year)
      )`);
    await q.query(`
      INSERT INTO read_model.revenue_day_sums
      SELECT app_id, day, platform, product_id, currency, after_first_year, sum(n), sum(unpriced),
             sum(gross_micros), sum(gross_micros * refund_share), sum(gross_usd), sum(gross_usd * refund_share)
      FROM (${REVENUE_CELL}) c GROUP BY 1, 2, 3, 4, 5, 6`);
    await q.query(`
      INSERT INTO read_model.revenue_month_usd
      SELECT s.app_id, date_trunc('month', s.day)::date, s.platform, s.product_id, s.after_first_year, sum(s.n), sum(s.unpriced),
             sum(CASE WHEN s.currency <> '' AND r.usd IS NULL THEN s.n ELSE 0 END),
             sum(s.gross_usd) + coalesce(sum(s.gross_micros / 1000000 * r.usd), 0), sum(s.refunded_usd) + coalesce(sum(s.refunded_micros / 1000000 * r.usd), 0)
      FROM read_model.revenue_day_sums s
      LEFT JOIN (SELECT p.day, p.currency, public.usd_rate(p.currency, p.day) AS usd
                 FROM (SELECT DISTINCT day, currency FROM read_model.revenue_day_sums WHERE currency <> '') p) r
        ON r.day = s.day AND r.currency = s.currency
      GROUP BY 1, 2, 3, 4, 5`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE read_model.revenue_month_usd`);
    await q.query(`DROP TABLE read_model.revenue_day_sums`);
    await q.query(stampFunction(TRANSACTION_COLUMNS));
    await q.query(`ALTER TABLE read_model.transactions DROP COLUMN revocation_type, DROP COLUMN refunded_share`);
    await q.query(`DROP FUNCTION public.usd_amount(numeric, text, timestamptz)`);
    await q.query(`DROP FUNCTION public.usd_rate(text, date)`);
    await q.query(`DROP TABLE public.fx_rates`);
  }
}
