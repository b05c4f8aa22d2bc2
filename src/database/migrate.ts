import type { DataSource } from 'typeorm';
import { refreshAllSummaries } from '../projection/customer-summaries.js';
import { MIGRATION_LOCK } from './advisory-locks.js';

/** Instances booting together must not run the same migration twice. Needs a pool of at least two:
 * the lock is held on one connection while TypeORM migrates on another. */
export async function runMigrations(dataSource: DataSource): Promise<string[]> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await runner.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    const applied = await dataSource.runMigrations({ transaction: 'each' });
    await runPendingRederivations(dataSource);
    return applied.map((m) => m.name);
  } finally {
    await runner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
    await runner.release();
  }
}

/**
 * Re-derivations a migration asked for (rows of public.pending_rederivations), run after the last
 * migration with today's code on today's schema: a migration carries only frozen SQL, so upgrading
 * an old database never runs today's projection code against a schema a later migration completes.
 * The request is removed in the same transaction as the work: a crash in between asks again.
 */
async function runPendingRederivations(dataSource: DataSource): Promise<void> {
  const [{ exists }] = (await dataSource.query(`SELECT to_regclass('public.pending_rederivations') IS NOT NULL AS exists`)) as { exists: boolean }[];
  if (!exists) return;
  await dataSource.transaction(async (m) => {
    await m.query('SET LOCAL statement_timeout = 0');
    const pending = (await m.query(`SELECT name FROM public.pending_rederivations FOR UPDATE`)) as { name: string }[];
    for (const { name } of pending) {
      if (name !== 'customer_summaries') throw new Error(`unknown re-derivation ${JSON.stringify(name)} requested by a migration`);
      await refreshAllSummaries(m, 'read_model');
    }
    await m.query(`DELETE FROM public.pending_rederivations`);
  });
}
