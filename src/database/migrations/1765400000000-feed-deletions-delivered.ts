import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Change-feed deletion entries (docs/change-feed.md, "Deletions") are sent to webhook endpoints as
 * `customer.deleted`: the deliveries' event_type check admits it. Frozen SQL.
 */
export class FeedDeletionsDelivered1765400000000 implements MigrationInterface {
  name = 'FeedDeletionsDelivered1765400000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE public.webhook_deliveries DROP CONSTRAINT webhook_deliveries_event_type_check`);
    await q.query(
      `ALTER TABLE public.webhook_deliveries ADD CONSTRAINT webhook_deliveries_event_type_check CHECK (event_type IN ('customer.updated', 'customer.deleted', 'transaction.updated'))`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM public.webhook_deliveries WHERE event_type = 'customer.deleted'`);
    await q.query(`ALTER TABLE public.webhook_deliveries DROP CONSTRAINT webhook_deliveries_event_type_check`);
    await q.query(
      `ALTER TABLE public.webhook_deliveries ADD CONSTRAINT webhook_deliveries_event_type_check CHECK (event_type IN ('customer.updated', 'transaction.updated'))`,
    );
  }
}
