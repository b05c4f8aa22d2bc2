import type { EntityManager } from 'typeorm';

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
  // days as text: reported as stored, not as instants ('-infinity' included)
  transaction_day_counts: 'app_id, day::text AS day, n',
  transaction_filter_day_counts: 'app_id, product_id, platform, sandbox, day::text AS day, n',
  customer_day_counts: 'app_id, day::text AS day, n',
  customer_end_weeks:
    'app_id, end_day::text AS end_day, first_week::text AS first_week, product_id, renewal_intent, grace_day::text AS grace_day, billing_retry, n',
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
  return differences;
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
