import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Reconciliation with the stores (docs/operations.md, "Reconciliation"). public.reconcile_checks
 * remembers when the reconciler last asked the store about a subscription (by receipt), so the
 * rotating sample reaches every subscription within RECONCILE_CHECK_EVERY and a suspect the store
 * just answered for is not asked again at once. public.reconcile_runs names each pass: a pass that
 * did not finish (SIGKILL) is resumed under the same name, and the import journal (kind
 * 'reconcile') skips what it had done. Not read-model tables: a rebuild keeps them. Frozen SQL.
 */
export class Reconcile1766400000000 implements MigrationInterface {
  name = 'Reconcile1766400000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE public.reconcile_checks (
        app_id     text        NOT NULL,
        receipt_id text        NOT NULL,
        checked_at timestamptz NOT NULL,
        PRIMARY KEY (app_id, receipt_id)
      )`);
    await q.query(`
      CREATE TABLE public.reconcile_runs (
        app_id      text        NOT NULL,
        run_id      text        NOT NULL,
        mode        text        NOT NULL CHECK (mode IN ('suspect', 'all')),
        started_at  timestamptz NOT NULL DEFAULT now(),
        finished_at timestamptz,
        PRIMARY KEY (app_id, run_id)
      )`);
    await q.query(`CREATE UNIQUE INDEX reconcile_runs_open_idx ON public.reconcile_runs (app_id, mode) WHERE finished_at IS NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE public.reconcile_runs`);
    await q.query(`DROP TABLE public.reconcile_checks`);
  }
}
