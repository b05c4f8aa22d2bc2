import type { EntityManager } from 'typeorm';
import { statusAtSql, watermarkSql } from '../../projection/customer-status-days.js';

export type TableDifference = {
  table: string;
  liveCount: number;
  rebuiltCount: number;
  /** First rows present in the live table but not (identically) in the rebuilt one, and vice versa. */
  onlyLive: Record<string, unknown>[];
  onlyRebuilt: Record<string, unknown>[];
};

const COMPARED: Record<string, string> = {
  customers: '*',
  receipts: '*',
  transactions: '*',
  projection_offsets: 'topic, partition, next_offset',
  // derived tables: drift here means the counts or summaries were not maintained right
  transaction_day_counts: 'app_id, day, n',
  transaction_filter_day_counts: 'app_id, product_id, platform, sandbox, day, n',
  customer_day_counts: 'app_id, day, n',
  customer_end_weeks: 'app_id, end_day, first_week, product_id, renewal_intent, grace_day, billing_retry, n',
};

/** Differences between the live read models and a rebuilt generation, table by table. */
export async function compareGenerations(m: EntityManager, rebuilt: string, sampleSize = 5): Promise<TableDifference[]> {
  const differences: TableDifference[] = [];
  for (const [table, listed] of Object.entries(COMPARED)) {
    const columns = listed === '*' ? await comparedColumns(m, table) : listed;
    const [{ live, other }] = await m.query(
      `SELECT (SELECT count(*) FROM read_model.${table})::int AS live, (SELECT count(*) FROM ${rebuilt}.${table})::int AS other`,
    );
    const onlyLive = await m.query(`(SELECT ${columns} FROM read_model.${table} EXCEPT ALL SELECT ${columns} FROM ${rebuilt}.${table}) LIMIT ${sampleSize}`);
    const onlyRebuilt = await m.query(`(SELECT ${columns} FROM ${rebuilt}.${table} EXCEPT ALL SELECT ${columns} FROM read_model.${table}) LIMIT ${sampleSize}`);
    if (live !== other || onlyLive.length > 0 || onlyRebuilt.length > 0) {
      differences.push({ table, liveCount: live, rebuiltCount: other, onlyLive, onlyRebuilt });
    }
  }
  const statusDays = await compareStatusDays(m, rebuilt, sampleSize);
  if (statusDays) differences.push(statusDays);
  return differences;
}

/**
 * customer_status_days holds statuses at each generation's own watermark, so the live counts are
 * compared with the fresh projection's customers placed at the live watermarks.
 */
async function compareStatusDays(m: EntityManager, rebuilt: string, sampleSize: number): Promise<TableDifference | undefined> {
  const kept = `SELECT app_id, first_day::text, status, product_id, renewal_intent, n FROM read_model.customer_status_days`;
  const placed = `
    SELECT c.app_id, (c.first_seen_at AT TIME ZONE 'UTC')::date::text, ${statusAtSql('w.at')}, coalesce(c.current_product_id, ''), coalesce(c.renewal_intent, ''), count(*)
    FROM ${rebuilt}.customers c CROSS JOIN LATERAL (SELECT ${watermarkSql('read_model', 'c.app_id')} AS at) w GROUP BY 1, 2, 3, 4, 5`;
  const [{ live, other }] = await m.query(`SELECT (SELECT count(*) FROM (${kept}) k)::int AS live, (SELECT count(*) FROM (${placed}) p)::int AS other`);
  const onlyLive = await m.query(`(${kept} EXCEPT ALL ${placed}) LIMIT ${sampleSize}`);
  const onlyRebuilt = await m.query(`(${placed} EXCEPT ALL ${kept}) LIMIT ${sampleSize}`);
  if (live === other && onlyLive.length === 0 && onlyRebuilt.length === 0) return undefined;
  return { table: 'customer_status_days', liveCount: live, rebuiltCount: other, onlyLive, onlyRebuilt };
}

/** A row's change position says when it changed, not what it holds: it differs after any rebuild. */
async function comparedColumns(m: EntityManager, table: string): Promise<string> {
  const rows = (await m.query(
    `SELECT column_name FROM information_schema.columns
     WHERE table_schema = 'read_model' AND table_name = $1 AND column_name <> 'change_position' ORDER BY ordinal_position`,
    [table],
  )) as { column_name: string }[];
  return rows.map((r) => `"${r.column_name}"`).join(', ');
}
