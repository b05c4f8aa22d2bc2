import { MigrationInterface, QueryRunner } from 'typeorm';

/** Bookkeeping for read-model generations and the rebuilds that produce them. */
export class Rebuilds1763800000000 implements MigrationInterface {
  name = 'Rebuilds1763800000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE public.read_model_generation (
        singleton   boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
        generation  integer     NOT NULL,
        switched_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`INSERT INTO public.read_model_generation (generation) VALUES (1)`);
    await q.query(`
      CREATE TABLE public.rebuilds (
        id             bigserial   PRIMARY KEY,
        kind           text        NOT NULL CHECK (kind IN ('rebuild', 'verify')),
        schema_name    text        NOT NULL,
        status         text        NOT NULL CHECK (status IN ('running', 'switched', 'verified', 'aborted')),
        target_offsets jsonb       NOT NULL,
        owner          text        NOT NULL,
        started_at     timestamptz NOT NULL DEFAULT now(),
        finished_at    timestamptz,
        report         jsonb
      )`);
    await q.query(`CREATE UNIQUE INDEX rebuilds_one_running_per_schema ON public.rebuilds (schema_name) WHERE status = 'running'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE public.rebuilds`);
    await q.query(`DROP TABLE public.read_model_generation`);
  }
}
