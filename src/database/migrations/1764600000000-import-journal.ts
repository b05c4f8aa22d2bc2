import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The resume journal of `import` (docs/import.md): the lines of a source (by application, kind and
 * the source's SHA-256) that are done, and for paged sources a checkpoint. Frozen SQL.
 */
export class ImportJournal1764600000000 implements MigrationInterface {
  name = 'ImportJournal1764600000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE public.import_journal (
        app_id        text        NOT NULL,
        kind          text        NOT NULL,
        source_digest text        NOT NULL,
        item_key      text        NOT NULL,
        line          integer     NOT NULL,
        outcome       text        NOT NULL CHECK (outcome IN ('imported', 'skipped')),
        detail        text,
        done_at       timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (app_id, kind, source_digest, item_key)
      )`);
    await q.query(`
      CREATE TABLE public.import_checkpoint (
        app_id        text        NOT NULL,
        kind          text        NOT NULL,
        source_digest text        NOT NULL,
        checkpoint    text        NOT NULL,
        updated_at    timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (app_id, kind, source_digest)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE public.import_checkpoint`);
    await q.query(`DROP TABLE public.import_journal`);
  }
}
