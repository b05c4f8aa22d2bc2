import type { DataSource } from 'typeorm';
import { applyBatch } from '../../src/projection/apply-batch.js';
import { createTestDatabase } from './database.js';

// When a row changed (its change position) is not what it holds.
const withoutPosition = (rows: Record<string, unknown>[]) => rows.map(({ change_position: _p, ...row }) => row);

/** Every read-model row, in a stable order: what "equal read models" compares. */
export async function snapshotReadModels(db: DataSource, schema = 'read_model') {
  const [customers, receipts, transactions, transactionDays, transactionFilterDays, customerDays] = await Promise.all([
    db.query(`SELECT * FROM ${schema}.customers ORDER BY app_id, application_username`).then(withoutPosition),
    db.query(`SELECT * FROM ${schema}.receipts ORDER BY app_id, receipt_id`),
    db.query(`SELECT * FROM ${schema}.transactions ORDER BY app_id, transaction_id`).then(withoutPosition),
    db.query(`SELECT app_id, day::text, n::int FROM ${schema}.transaction_day_counts ORDER BY 1, 2`),
    db.query(`SELECT app_id, product_id, platform, sandbox, day::text, n::int FROM ${schema}.transaction_filter_day_counts ORDER BY 1, 2, 3, 4, 5`),
    db.query(`SELECT app_id, day::text, n::int FROM ${schema}.customer_day_counts ORDER BY 1, 2`),
  ]);
  // Kept by the projection batch by batch, they must be what the rows add up to at every snapshot.
  const customerCells = await expectCellsKept(db, schema);
  const revenueDays = await expectRevenueKept(db, schema);
  return { customers, receipts, transactions, transactionDays, transactionFilterDays, customerDays, customerCells, revenueDays };
}

/**
 * revenue_day_sums against the rows, as docs/revenue.md describes the report's sums (written here
 * again, not src/'s revenue cell): production rows, not pending, not family-shared, per UTC charge
 * day, store, product, currency (none when the producer sent USD or there is no amount) and
 * whether the charge falls after the subscriber's first year.
 */
export async function expectRevenueKept(db: DataSource, schema = 'read_model') {
  const figures = `sum(n)::int AS n, sum(unpriced)::int AS unpriced, trim_scale(sum(gross_micros)) AS gross_micros,
    trim_scale(sum(refunded_micros)) AS refunded_micros, trim_scale(sum(gross_usd)) AS gross_usd, trim_scale(sum(refunded_usd)) AS refunded_usd`;
  const [kept, ofRows] = await Promise.all([
    db.query(`
      SELECT app_id, day::text, platform, product_id, currency, after_first_year, ${figures} FROM ${schema}.revenue_day_sums
      GROUP BY 1, 2, 3, 4, 5, 6 HAVING sum(n) <> 0 OR sum(gross_micros) <> 0 OR sum(gross_usd) <> 0 ORDER BY 1, 2, 3, 4, 5, 6`),
    db.query(`
      SELECT app_id, day::text, platform, product_id, currency, after_first_year, ${figures}
      FROM (
        SELECT app_id, to_char(coalesce(last_renewal_date, purchase_date, occurred_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, platform, product_id,
               CASE WHEN amount_usd IS NOT NULL OR amount_micros IS NULL OR currency IS NULL THEN '' ELSE currency END AS currency,
               coalesce(expiration_date IS NOT NULL AND coalesce(last_renewal_date, purchase_date) >= purchase_date + interval '1 year', false) AS after_first_year,
               1 AS n, (amount_usd IS NULL AND (amount_micros IS NULL OR currency IS NULL))::int AS unpriced,
               CASE WHEN amount_usd IS NULL AND currency IS NOT NULL THEN coalesce(amount_micros, 0) ELSE 0 END::numeric AS gross_micros,
               coalesce(amount_usd, 0)::numeric AS gross_usd,
               CASE WHEN revocation_date IS NULL OR revocation_type = 'FAMILY_REVOKE' OR (snapshot_is_upgraded AND revocation_type IS NULL) THEN 0
                    ELSE coalesce(refunded_share, 1) END AS share
        FROM ${schema}.transactions
        WHERE sandbox IS NOT TRUE AND is_pending IS NOT TRUE AND ownership_type IS DISTINCT FROM 'FAMILY_SHARED') r,
      LATERAL (SELECT r.gross_micros * r.share AS refunded_micros, r.gross_usd * r.share AS refunded_usd) x
      GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6`),
  ]);
  if (JSON.stringify(kept) !== JSON.stringify(ofRows)) {
    throw new Error(`revenue_day_sums drifted from the transaction rows:\nkept ${JSON.stringify(kept)}\nrows ${JSON.stringify(ofRows)}`);
  }
  // and the USD months are the day sums converted now, at each day's rate
  const [months, ofDays] = await Promise.all([
    db.query(`SELECT app_id, month::text, platform, product_id, after_first_year, n::int, unpriced::int, unconverted::int,
                     round(gross_usd, 9)::text AS gross, round(refunds_usd, 9)::text AS refunds
              FROM ${schema}.revenue_month_usd WHERE n <> 0 ORDER BY 1, 2, 3, 4, 5`),
    db.query(`SELECT app_id, to_char(day, 'YYYY-MM-01') AS month, platform, product_id, after_first_year, sum(n)::int AS n, sum(unpriced)::int AS unpriced,
                     sum(CASE WHEN currency <> '' AND public.usd_rate(currency, day) IS NULL THEN n ELSE 0 END)::int AS unconverted,
                     round(sum(gross_usd + coalesce(gross_micros / 1000000 * public.usd_rate(currency, day), 0)), 9)::text AS gross,
                     round(sum(refunded_usd + coalesce(refunded_micros / 1000000 * public.usd_rate(currency, day), 0)), 9)::text AS refunds
              FROM ${schema}.revenue_day_sums GROUP BY 1, 2, 3, 4, 5
              HAVING sum(n) <> 0 ORDER BY 1, 2, 3, 4, 5`),
  ]);
  if (JSON.stringify(months) !== JSON.stringify(ofDays)) {
    throw new Error(`revenue_month_usd drifted from the day sums:\nkept ${JSON.stringify(months)}\ndays ${JSON.stringify(ofDays)}`);
  }
  return kept as Record<string, unknown>[];
}

/**
 * customer_end_weeks against the rows: customers per access-end UTC day, Monday of the first-seen UTC
 * week (ISO weeks here, not src/'s date_trunc), product, intent, grace-start UTC day and billing
 * retry, as docs/api.md describes the cells (written here again, not src/'s CELL_COLUMNS).
 */
export async function expectCellsKept(db: DataSource, schema = 'read_model') {
  const [kept, ofRows] = await Promise.all([
    db.query(
      `SELECT app_id, end_day::text, first_week::text, product_id, renewal_intent, grace_day::text, billing_retry, n::int FROM ${schema}.customer_end_weeks ORDER BY 1, 2, 3, 4, 5, 6, 7`,
    ),
    db.query(`
      SELECT app_id, coalesce(to_char(expiration_date AT TIME ZONE 'UTC', 'YYYY-MM-DD'), '-infinity') AS end_day,
             to_char((first_seen_at AT TIME ZONE 'UTC')::date - (extract(isodow FROM first_seen_at AT TIME ZONE 'UTC')::int - 1), 'YYYY-MM-DD') AS first_week,
             coalesce(current_product_id, '') AS product_id, coalesce(renewal_intent, '') AS renewal_intent,
             coalesce(to_char(grace_from AT TIME ZONE 'UTC', 'YYYY-MM-DD'), 'infinity') AS grace_day, billing_retry, count(*)::int AS n
      FROM ${schema}.customers GROUP BY 1, 2, 3, 4, 5, 6, 7 ORDER BY 1, 2, 3, 4, 5, 6, 7`),
  ]);
  if (JSON.stringify(kept) !== JSON.stringify(ofRows)) {
    throw new Error(`customer_end_weeks drifted from the customer rows:\nkept ${JSON.stringify(kept)}\nrows ${JSON.stringify(ofRows)}`);
  }
  return kept as Record<string, unknown>[];
}

/** The reference: the same events projected from scratch in one batch into a fresh database. */
export async function projectFromScratch(db: DataSource, values: readonly Buffer[]): Promise<void> {
  const outcome = await applyBatch(db, {
    topic: 'from-scratch',
    partition: 0,
    messages: values.map((value, i) => ({ offset: String(i), key: null, value })),
  });
  if (outcome.kind !== 'applied') throw new Error('from-scratch projection refused');
}

/**
 * Read models as the events alone make them: when a log received each event (provenance's
 * state_received_at) is that log's own fact, which events handed over without a log do not carry.
 */
export function arrivalsApart(models: Awaited<ReturnType<typeof snapshotReadModels>>) {
  return { ...models, transactions: (models.transactions as Record<string, unknown>[]).map(({ state_received_at: _at, ...row }) => row) };
}

/**
 * The read models built incrementally equal one from-scratch projection of the same events, and
 * every row says when its log received the event it shows.
 */
export async function expectEqualsFromScratch(db: DataSource, values: readonly Buffer[]): Promise<void> {
  const reference = await createTestDatabase('scratch');
  try {
    await projectFromScratch(reference.dataSource, values);
    const live = await snapshotReadModels(db);
    expect(arrivalsApart(live)).toEqual(arrivalsApart(await snapshotReadModels(reference.dataSource)));
    expect((live.transactions as { state_received_at: Date | null }[]).filter((t) => t.state_received_at === null)).toEqual([]);
  } finally {
    await reference.drop();
  }
}

export async function countRows(db: DataSource, table: string): Promise<number> {
  const [{ n }] = await db.query(`SELECT count(*)::int AS n FROM ${table}`);
  return n;
}
