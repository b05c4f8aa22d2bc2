import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Webhook endpoints per application and their deliveries (an outbox fed from the change feed). In
 * `public`: they outlive read-model generations, and their cursors stay valid across a switch.
 */
export class Webhooks1764300000000 implements MigrationInterface {
  name = 'Webhooks1764300000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE public.webhook_endpoints (
        id                         bigserial   PRIMARY KEY,
        app_id                     text        NOT NULL,
        url                        text        NOT NULL,
        secret                     text        NOT NULL,
        previous_secret            text,
        previous_secret_until      timestamptz,
        customers_cursor           text        NOT NULL,
        transactions_cursor        text        NOT NULL,
        created_at                 timestamptz NOT NULL DEFAULT now(),
        failing_since              timestamptz,
        disabled_at                timestamptz,
        disabled_reason            text
      )`);
    await q.query(`CREATE INDEX webhook_endpoints_app_idx ON public.webhook_endpoints (app_id)`);
    await q.query(`
      CREATE TABLE public.webhook_deliveries (
        id              bigserial   PRIMARY KEY,
        endpoint_id     bigint      NOT NULL REFERENCES public.webhook_endpoints (id) ON DELETE CASCADE,
        event_type      text        NOT NULL CHECK (event_type IN ('customer.updated', 'transaction.updated')),
        order_key       text        NOT NULL,
        payload         text        NOT NULL,
        status          text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
        attempts        integer     NOT NULL DEFAULT 0,
        created_at      timestamptz NOT NULL DEFAULT now(),
        next_attempt_at timestamptz NOT NULL DEFAULT now(),
        lease_until     timestamptz,
        last_attempt_at timestamptz,
        last_status     integer,
        last_error      text,
        delivered_at    timestamptz
      )`);
    await q.query(`CREATE INDEX webhook_deliveries_due_idx ON public.webhook_deliveries (next_attempt_at, id) WHERE status = 'pending'`);
    await q.query(`CREATE INDEX webhook_deliveries_order_idx ON public.webhook_deliveries (endpoint_id, order_key, id) WHERE status = 'pending'`);
    await q.query(`CREATE INDEX webhook_deliveries_endpoint_idx ON public.webhook_deliveries (endpoint_id, id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE public.webhook_deliveries`);
    await q.query(`DROP TABLE public.webhook_endpoints`);
  }
}
