import type { DataSource } from 'typeorm';
import { encodeCursor } from '../change-feed/change-cursor.js';
import { HIGH_WATER } from '../change-feed/change-positions.sql.js';
import type { WebhookSettings } from '../config/app-config.js';
import { newWebhookSecret } from './webhook-signing.js';
import { checkResolvedTarget, checkWebhookTarget } from './webhook-target.js';
import { webhooksSql } from './webhooks.sql.js';

/** How long a rotated-out secret still signs messages next to the new one. */
export const PREVIOUS_SECRET_GRACE_MS = 24 * 3_600_000;

export class WebhookEndpointError extends Error {}

export type EndpointListing = {
  id: string;
  app_id: string;
  url: string;
  created_at: Date;
  failing_since: Date | null;
  disabled_at: Date | null;
  disabled_reason: string | null;
  pending: number;
  delivered: number;
  failed: number;
  oldest_pending: Date | null;
};

/**
 * Registers an endpoint. It receives the changes made from now on, or every row from the beginning
 * of the change feed with `fromStart`. Returns its id and signing secret.
 */
export async function addEndpoint(
  db: DataSource,
  settings: WebhookSettings,
  o: { appId: string; url: string; fromStart?: boolean },
): Promise<{ id: string; secret: string }> {
  if (!/^[\x21-\x7e]{1,200}$/.test(o.appId)) throw new WebhookEndpointError('--app must be an application id (printable, at most 200 characters)');
  const target = checkWebhookTarget(o.url, settings.allowHosts);
  await checkResolvedTarget(target, settings.allowHosts);
  const url = target.toString();
  const secret = newWebhookSecret();
  const [{ mark }] = (await db.query(`SELECT ${HIGH_WATER}::text AS mark`)) as { mark: string }[];
  const start = o.fromStart ? '0' : encodeCursor({ position: mark, key: '' });
  const [{ id }] = (await db.query(
    `INSERT INTO public.webhook_endpoints (app_id, url, secret, customers_cursor, transactions_cursor) VALUES ($1, $2, $3, $4, $4) RETURNING id::text`,
    [o.appId, url, secret, start],
  )) as { id: string }[];
  return { id, secret };
}

export async function listEndpoints(db: DataSource, appId?: string): Promise<EndpointListing[]> {
  return db.query(
    `SELECT e.id::text, e.app_id, e.url, e.created_at, e.failing_since, e.disabled_at, e.disabled_reason,
            count(*) FILTER (WHERE d.status = 'pending')::int AS pending,
            count(*) FILTER (WHERE d.status = 'delivered')::int AS delivered,
            count(*) FILTER (WHERE d.status = 'failed')::int AS failed,
            min(d.created_at) FILTER (WHERE d.status = 'pending') AS oldest_pending
     FROM public.webhook_endpoints e LEFT JOIN public.webhook_deliveries d ON d.endpoint_id = e.id
     WHERE $1::text IS NULL OR e.app_id = $1
     GROUP BY e.id ORDER BY e.id`,
    [appId ?? null],
  );
}

export async function removeEndpoint(db: DataSource, id: string): Promise<void> {
  const [rows] = (await db.query(`DELETE FROM public.webhook_endpoints WHERE id = $1::bigint RETURNING id`, [id])) as [unknown[], number];
  if (rows.length === 0) throw new WebhookEndpointError(`no webhook endpoint ${id} (see webhooks list)`);
}

/** A new secret; the old one still signs (second signature) for PREVIOUS_SECRET_GRACE_MS. */
export async function rotateSecret(db: DataSource, id: string): Promise<string> {
  const secret = newWebhookSecret();
  const [rows] = (await db.query(
    `UPDATE public.webhook_endpoints SET previous_secret = secret, previous_secret_until = now() + $3 * interval '1 millisecond', secret = $2
     WHERE id = $1::bigint RETURNING id`,
    [id, secret, PREVIOUS_SECRET_GRACE_MS],
  )) as [unknown[], number];
  if (rows.length === 0) throw new WebhookEndpointError(`no webhook endpoint ${id} (see webhooks list)`);
  return secret;
}

export type DeliveryListing = {
  id: string;
  event_type: string;
  order_key: string;
  status: string;
  attempts: number;
  created_at: Date;
  last_attempt_at: Date | null;
  last_status: number | null;
  last_error: string | null;
  next_attempt_at: Date;
};

export async function listDeliveries(db: DataSource, id: string, o: { status?: string; limit: number }): Promise<DeliveryListing[]> {
  await mustExist(db, id);
  return db.query(
    `SELECT id::text, event_type, order_key, status, attempts, created_at, last_attempt_at, last_status, last_error, next_attempt_at
     FROM public.webhook_deliveries WHERE endpoint_id = $1::bigint AND ($2::text IS NULL OR status = $2)
     ORDER BY id DESC LIMIT $3`,
    [id, o.status ?? null, o.limit],
  );
}

/**
 * Sends again: one delivery, or every failed one of the endpoint, except an older state of a row
 * that has a newer delivery (that one is, or was, sent). A disabled endpoint is enabled again (its
 * cursors kept, so it also gets what changed while it was disabled).
 */
export async function redeliver(db: DataSource, id: string, deliveryId?: string): Promise<{ queued: number; superseded: number }> {
  await mustExist(db, id);
  return db.transaction(async (m) => {
    const superseded = (await m.query(webhooksSql.supersededBy, [id, deliveryId ?? null])) as { id: string; newer: string }[];
    if (deliveryId !== undefined && superseded.length > 0) {
      throw new WebhookEndpointError(
        `delivery ${deliveryId} carries an older state of its row than delivery ${superseded[0].newer}; sent after it, it would leave the receiver behind (webhooks redeliver --id ${id} --delivery ${superseded[0].newer} sends the newest)`,
      );
    }
    await m.query(`UPDATE public.webhook_endpoints SET disabled_at = NULL, disabled_reason = NULL, failing_since = NULL WHERE id = $1::bigint`, [id]);
    const [rows] = (await m.query(webhooksSql.redeliver, [id, deliveryId ?? null])) as [unknown[], number];
    if (deliveryId !== undefined && rows.length === 0)
      throw new WebhookEndpointError(`endpoint ${id} has no delivery ${deliveryId} (see webhooks deliveries --id ${id})`);
    return { queued: rows.length, superseded: superseded.length };
  });
}

async function mustExist(db: DataSource, id: string): Promise<void> {
  const rows = (await db.query(`SELECT 1 FROM public.webhook_endpoints WHERE id = $1::bigint`, [id])) as unknown[];
  if (rows.length === 0) throw new WebhookEndpointError(`no webhook endpoint ${id} (see webhooks list)`);
}
