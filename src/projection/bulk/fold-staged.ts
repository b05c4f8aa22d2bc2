import { revenueMonthsSql } from '../../revenue/revenue-months.sql.js';
import { deriveAllMonths } from '../../revenue/revenue-months.js';
import type { EntityManager } from 'typeorm';
import { FEED_TABLES, installStampTriggerSql, type StampMode } from '../../change-feed/change-positions.sql.js';
import { refreshAllSummaries } from '../customer-summaries.js';
import { applyAllReplacements } from '../replacements.js';
import { bulkSql } from './bulk-load.sql.js';

type Query = Pick<EntityManager, 'query'>;

/**
 * Readies a new, empty generation for the bulk path: the staging table, and no secondary indexes
 * or change-position triggers on the tables the fold loads (both come back after the load).
 */
export async function prepareBulkLoad(m: Query, schema: string): Promise<void> {
  const q = bulkSql(schema);
  await m.query(q.createStaged);
  for (const { name } of (await m.query(q.generationIndexes)) as { name: string }[]) await m.query(`DROP INDEX ${name}`);
}

export async function isStaging(m: Query, schema: string): Promise<boolean> {
  const [{ staged }] = (await m.query(bulkSql(schema).staged)) as { staged: boolean }[];
  return staged;
}

/**
 * Turns the staged log into the generation's rows, in the caller's transaction (interrupted, it
 * leaves the staged log as it was, and the fold runs again on resume). Afterwards the generation
 * is what the live path would have built from the same messages, and the live path continues it.
 */
export async function foldStaged(m: Query, schema: string, mode: Exclude<StampMode, 'live'>, onStep: (step: string) => void = () => {}): Promise<void> {
  const q = bulkSql(schema);
  // One big sort per table instead of an index insert per row; the server's defaults are for many small queries.
  await m.query(`SET LOCAL work_mem = '256MB'; SET LOCAL maintenance_work_mem = '1GB'; SET LOCAL statement_timeout = 0; SET LOCAL synchronous_commit = off`);
  onStep('transactions');
  await m.query(q.foldTransactions(mode === 'generation'));
  onStep('receipts and customers');
  await m.query(q.foldErasures);
  await m.query(q.foldReceipts);
  // Always: a link naming a sealed username whose key is gone names no one even without its erasure in the log.
  await m.query(q.eraseReceiptOwners);
  await m.query(q.foldCustomers);
  await m.query(q.foldDayCounts);
  await m.query(q.dropStaged);
  onStep('indexes');
  for (const { indexdef } of (await m.query(q.secondaryIndexes)) as { indexdef: string }[]) {
    await m.query(indexdef.replace(/ ON read_model\./, ` ON ${schema}.`));
  }
  for (const table of ['transactions', 'receipts', 'customers']) await m.query(`ANALYZE ${schema}.${table}`);
  // LIKE copies no triggers: installed here, after the load. A rebuild keeps unchanged rows' positions,
  // a verify needs none. Summaries are decided by the same function as on the live path.
  for (const table of FEED_TABLES) await m.query(installStampTriggerSql(schema, table, mode));
  // After the triggers: a row marked replaced keeps the live row's position when it shows the same.
  onStep('replacements');
  await applyAllReplacements(m, schema);
  onStep('customer summaries');
  await refreshAllSummaries(m, schema, 5000);
  await m.query(`ANALYZE ${schema}.customers`);
  // Last: USD per month from the day sums, under the rates lock as a batch adds to them, held only
  // from here to the commit (a rates load waiting for it would queue every live batch behind it)
  await m.query(revenueMonthsSql(schema).shareRates);
  await deriveAllMonths(m, schema);
}
