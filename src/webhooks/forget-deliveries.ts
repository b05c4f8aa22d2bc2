import type { EntityManager } from 'typeorm';

/**
 * Webhook deliveries of customers whose rows went (an erasure), in the transaction that deleted them:
 * their customer.updated messages go (customer.deleted follows from the feed), their transactions'
 * keep going, ordered by receipt instead of by name, so no queued message names them any more.
 */
export async function forgetDeliveries(m: Pick<EntityManager, 'query'>, gone: readonly { app_id: string; key: string }[]): Promise<void> {
  if (gone.length === 0) return;
  const args = [gone.map((c) => c.app_id), gone.map((c) => `customer:${c.key}`)];
  await m.query(
    `DELETE FROM public.webhook_deliveries d USING public.webhook_endpoints e, unnest($1::text[], $2::text[]) AS k(app_id, order_key)
     WHERE e.id = d.endpoint_id AND e.app_id = k.app_id AND d.order_key = k.order_key AND d.event_type <> 'transaction.updated'`,
    args,
  );
  await m.query(
    `UPDATE public.webhook_deliveries d SET order_key = 'receipt:' || (d.payload::jsonb -> 'data' ->> 'receiptId')
     FROM public.webhook_endpoints e, unnest($1::text[], $2::text[]) AS k(app_id, order_key)
     WHERE e.id = d.endpoint_id AND e.app_id = k.app_id AND d.order_key = k.order_key`,
    args,
  );
}
