import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Event-id claims go (issue 26): exactly-once comes from the offsets stored with the rows, and
 * re-applying an event is idempotent, so read_model.processed_events (one row per event ever
 * applied, its key the largest index written per event) is dropped. An id reused for other data is
 * now resolved like any snapshot (docs/events/README.md, "Ordering rules").
 *
 * Frozen: plain SQL only.
 */
export class EventIdClaimsGo1765520000000 implements MigrationInterface {
  name = 'EventIdClaimsGo1765520000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('SET LOCAL statement_timeout = 0');
    // A generation being built still claims ids; switched in, it would bring the table back.
    await q.query(`
      UPDATE public.rebuilds SET status = 'aborted', finished_at = now(),
             report = '{"reason": "read-model schema upgraded (migration EventIdClaimsGo1765520000000); start the rebuild again"}'
      WHERE status = 'running'`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_next CASCADE`);
    await q.query(`DROP SCHEMA IF EXISTS read_model_verify CASCADE`);
    await q.query(`DROP TABLE IF EXISTS read_model.processed_events`);
  }

  async down(q: QueryRunner): Promise<void> {
    // Empty: ids applied before the downgrade are not known any more, so an old version would apply
    // a repeated id again, which is idempotent anyway.
    await q.query(`
      CREATE TABLE IF NOT EXISTS read_model.processed_events (
        app_id   text NOT NULL,
        event_id text NOT NULL,
        PRIMARY KEY (app_id, event_id)
      )`);
  }
}
