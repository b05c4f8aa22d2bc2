import type { DataSource } from 'typeorm';
import { LIVE_PROJECTION_LOCK, LIVE_SCHEMA, writeDeltas } from './apply-batch.js';
import { sql } from './apply-batch.sql.js';
import { statusAtSql, statusMovedSql, type StatusDayDelta } from './customer-status-days.js';

/** How long a sweep waits for the application's lock: batches asking for it queue behind the sweep meanwhile. */
const LOCK_WAIT = '2s';

/**
 * Moves application `appId`'s status watermark to `to`, and with it every customer whose status
 * changed in between (an access end or grace start passed) to its new status's count. Holds the
 * application's lock exclusively, as an erasure does, so no batch places a customer meanwhile: a
 * minute's access ends take milliseconds; after a day's stop, a day's (about 7,000 at 1M customers).
 * Returns how many customers changed status.
 */
export async function sweepApp(db: DataSource, appId: string, to: Date, schema = LIVE_SCHEMA): Promise<number> {
  const q = sql(schema);
  return db.transaction(async (m) => {
    await m.query(`SET LOCAL jit = off; SET LOCAL statement_timeout = 0; SET LOCAL lock_timeout = '${LOCK_WAIT}'`);
    if (schema === LIVE_SCHEMA) await m.query('SELECT pg_advisory_xact_lock_shared($1)', [LIVE_PROJECTION_LOCK]);
    await m.query(q.lockApps, [[appId], [true]]);
    // Created under the exclusive lock: no batch is placing customers at -infinity meanwhile.
    await m.query(`INSERT INTO ${schema}.customer_status_watermarks (app_id, at) VALUES ($1, '-infinity') ON CONFLICT (app_id) DO NOTHING`, [appId]);
    const deltas = (await m.query(
      `WITH w AS (SELECT app_id, at AS from_at, $2::timestamptz AS upto FROM ${schema}.customer_status_watermarks WHERE app_id = $1 FOR UPDATE),
       moved AS (
         SELECT (c.first_seen_at AT TIME ZONE 'UTC')::date AS first_day, coalesce(c.current_product_id, '') AS product_id,
                coalesce(c.renewal_intent, '') AS renewal_intent, ${statusAtSql('w.from_at')} AS was, ${statusAtSql('w.upto')} AS becomes
         FROM w JOIN ${schema}.customers c ON ${statusMovedSql('w.app_id', 'w.from_at', 'w.upto')})
       SELECT $1 AS app_id, status, first_day::text, product_id, renewal_intent, sum(n)::int AS n FROM (
         SELECT was AS status, first_day, product_id, renewal_intent, -1 AS n FROM moved WHERE was <> becomes
         UNION ALL SELECT becomes, first_day, product_id, renewal_intent, 1 FROM moved WHERE was <> becomes) x
       GROUP BY 1, 2, 3, 4, 5 HAVING sum(n) <> 0`,
      [appId, to],
    )) as StatusDayDelta[];
    await writeDeltas(m, q.statusDays, deltas);
    await m.query(`UPDATE ${schema}.customer_status_watermarks SET at = $2 WHERE app_id = $1`, [appId, to]);
    return deltas.reduce((sum, d) => sum + Math.max(d.n, 0), 0);
  });
}

/** sweepApp for every application whose watermark is not `to`, or that has none yet; returns the customers moved. */
export async function sweepStatuses(db: DataSource, to: Date, schema = LIVE_SCHEMA): Promise<number> {
  const apps = (await db.query(
    `SELECT app_id FROM ${schema}.customer_status_watermarks WHERE at <> $1
     UNION SELECT DISTINCT d.app_id FROM ${schema}.customer_status_days d
     WHERE NOT EXISTS (SELECT 1 FROM ${schema}.customer_status_watermarks w WHERE w.app_id = d.app_id) ORDER BY 1`,
    [to],
  )) as { app_id: string }[];
  let moved = 0;
  for (const { app_id } of apps) moved += await sweepApp(db, app_id, to, schema);
  return moved;
}
