import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A delivery's `webhook-id` was `msg_<row id>`, which starts again at msg_1 when the database is
 * recreated or restored from an older backup, so a receiver deduping on it (as docs/change-feed.md
 * says to) dropped new messages. Ids are now random and stored with the delivery (a retry sends the
 * same one); deliveries queued before keep the id they may already have been sent with.
 */
export class WebhookMessageIds1764520000000 implements MigrationInterface {
  name = 'WebhookMessageIds1764520000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE public.webhook_deliveries ADD COLUMN message_id text`);
    await q.query(`UPDATE public.webhook_deliveries SET message_id = 'msg_' || id`);
    await q.query(`
      ALTER TABLE public.webhook_deliveries
        ALTER COLUMN message_id SET DEFAULT 'msg_' || replace(gen_random_uuid()::text, '-', ''),
        ALTER COLUMN message_id SET NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE public.webhook_deliveries DROP COLUMN message_id`);
  }
}
