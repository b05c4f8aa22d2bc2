import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Kafka keys are bytes, NUL included; as text, a key PostgreSQL cannot store stalled its partition.
 * Each stored offset remembers the SHA-1 of the message projected last, so a recreated or rewritten
 * topic is recognised on resume even when it has grown past the stored offset.
 */
export class FaultProofing1764100000000 implements MigrationInterface {
  name = 'FaultProofing1764100000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE public.dead_letters ALTER COLUMN key TYPE bytea USING convert_to(key, 'UTF8')`);
    await q.query(`ALTER TABLE read_model.projection_offsets ADD COLUMN last_message_sha1 bytea`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE read_model.projection_offsets DROP COLUMN last_message_sha1`);
    await q.query(`ALTER TABLE public.dead_letters ALTER COLUMN key TYPE text USING convert_from(key, 'UTF8')`);
  }
}
