import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Transactions a rebuild drops are announced like erased customers (docs/change-feed.md,
 * "Rebuilds"): sent to webhook endpoints as `transaction.deleted`, which the deliveries' event_type
 * check now admits. Frozen SQL.
 */
export class TransactionDeletionsDelivered1765600000000 implements MigrationInterface {
  name = 'TransactionDeletionsDelivered1765600000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE public.webhook_deliveries DROP CONSTRAINT webhook_deliveries_event_type_check`);
    await q.query(
      `ALTER TABLE public.webhook_deliveries ADD CONSTRAINT webhook_deliveries_event_type_check CHECK (event_type IN ('customer.updated', 'customer.deleted', 'transaction.updated', 'transaction.deleted'))`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM public.webhook_deliveries WHERE event_type = 'transaction.deleted'`);
    await q.query(`ALTER TABLE public.webhook_deliveries DROP CONSTRAINT webhook_deliveries_event_type_check`);
    await q.query(
      `ALTER TABLE public.webhook_deliveries ADD CONSTRAINT webhook_deliveries_event_type_check CHECK (event_type IN ('customer.updated', 'customer.deleted', 'transaction.updated'))`,
    );
  }
}
