import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The rotating sample's place (docs/operations.md, "Reconciliation"): a finished pass records the
 * last receipt it sampled, and the next pass samples on from there, wrapping around. Without it each
 * pass began at the first receipt, and subscriptions whose answers kept failing (never recorded as
 * checked) took the sample's places in every pass, starving the rest. Frozen SQL.
 */
export class ReconcileSampleCursor1766410000000 implements MigrationInterface {
  name = 'ReconcileSampleCursor1766410000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE public.reconcile_runs ADD COLUMN sample_after text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE public.reconcile_runs DROP COLUMN sample_after`);
  }
}
