import type { DataSource } from 'typeorm';
import { RECONCILE_LOCK } from '../database/advisory-locks.js';

/**
 * Runs `pass` while holding RECONCILE_LOCK on a connection of its own, or returns undefined at once
 * when another instance (the schedule, another `reconcile`) holds it: two passes of one app would
 * share one unfinished run and its journal.
 */
export async function withReconcileLock<T>(db: DataSource, pass: () => Promise<T>): Promise<T | undefined> {
  const runner = db.createQueryRunner();
  await runner.connect();
  try {
    const [{ locked }] = (await runner.query('SELECT pg_try_advisory_lock($1) AS locked', [RECONCILE_LOCK])) as { locked: boolean }[];
    if (!locked) return undefined;
    try {
      return await pass();
    } finally {
      await runner.query('SELECT pg_advisory_unlock($1)', [RECONCILE_LOCK]);
    }
  } finally {
    await runner.release();
  }
}
