import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Deliveries were ordered only per order key (a receipt's owner at queue time), so a transaction's
 * state queued under its previous owner and its later state queued under the new owner drained
 * independently and the older one could arrive last. Each delivery now also names the row it
 * carries (`row_key`), and a delivery is due only while it is the oldest pending one of its order
 * key and of its row. Deliveries queued before get their row from their payload; one without a row
 * key (NULL: written by hand) is ordered by its order key alone.
 */
export class WebhookRowKeys1765100000000 implements MigrationInterface {
  name = 'WebhookRowKeys1765100000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE public.webhook_deliveries ADD COLUMN row_key text`);
    await q.query(`
      UPDATE public.webhook_deliveries SET row_key = CASE
        WHEN event_type = 'transaction.updated' AND (payload::jsonb -> 'data' ->> 'transactionId') IS NOT NULL
          THEN 'transaction:' || (payload::jsonb -> 'data' ->> 'transactionId')
        WHEN event_type = 'customer.updated' AND (payload::jsonb -> 'data' ->> 'applicationUsername') IS NOT NULL
          THEN 'customer:' || (payload::jsonb -> 'data' ->> 'applicationUsername')
        ELSE order_key END`);
    await q.query(`CREATE INDEX webhook_deliveries_row_idx ON public.webhook_deliveries (endpoint_id, row_key, id) WHERE status = 'pending'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX public.webhook_deliveries_row_idx`);
    await q.query(`ALTER TABLE public.webhook_deliveries DROP COLUMN row_key`);
  }
}
