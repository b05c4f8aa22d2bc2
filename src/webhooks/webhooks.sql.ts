// SQL of webhook delivery: endpoints (public.webhook_endpoints) and the deliveries queued for them
// from the change feed (public.webhook_deliveries).

import { WEBHOOK_QUEUE_LOCK_SPACE } from '../database/advisory-locks.js';

export const webhooksSql = {
  activeEndpoints: `SELECT id::text FROM public.webhook_endpoints WHERE disabled_at IS NULL ORDER BY id`,

  /** Without a row lock: it would give this transaction an id and hold the feed's high-water mark. */
  tryQueueLock: `SELECT pg_try_advisory_xact_lock(${WEBHOOK_QUEUE_LOCK_SPACE}, $1::bigint::int) AS locked`,

  endpointCursors: `
    SELECT app_id, customers_cursor, transactions_cursor, created_at FROM public.webhook_endpoints
    WHERE id = $1::bigint AND disabled_at IS NULL`,

  /** Who owns each receipt now: a transaction's deliveries are ordered with its customer's. */
  receiptOwners: `
    SELECT receipt_id, application_username FROM read_model.receipts
    WHERE app_id = $1 AND receipt_id = ANY($2::text[])`,

  queue: `
    INSERT INTO public.webhook_deliveries (endpoint_id, event_type, order_key, row_key, payload)
    SELECT $1::bigint, t, k, r, p FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS d(t, k, r, p, n) ORDER BY n`,

  advance: `UPDATE public.webhook_endpoints SET customers_cursor = $2, transactions_cursor = $3 WHERE id = $1::bigint`,

  /**
   * Due deliveries, claimed with a lease. A delivery is due only while it is the oldest pending one
   * of its order key (a customer, or a receipt without one) and of its row key (the row it carries):
   * a customer's changes arrive in order, and so do a row's, even when the row moved to another
   * customer between two of them. The endpoint's oldest pending delivery is always due, so nothing
   * waits forever. SKIP LOCKED lets instances share the work.
   */
  claim: `
    WITH due AS (
      SELECT d.id FROM public.webhook_deliveries d
      JOIN public.webhook_endpoints e ON e.id = d.endpoint_id AND e.disabled_at IS NULL
      WHERE d.status = 'pending' AND d.next_attempt_at <= now() AND (d.lease_until IS NULL OR d.lease_until < now())
        AND NOT EXISTS (
          SELECT 1 FROM public.webhook_deliveries p
          WHERE p.endpoint_id = d.endpoint_id AND p.order_key = d.order_key AND p.status = 'pending' AND p.id < d.id)
        AND NOT EXISTS (
          SELECT 1 FROM public.webhook_deliveries p
          WHERE p.endpoint_id = d.endpoint_id AND p.row_key = d.row_key AND p.status = 'pending' AND p.id < d.id)
      ORDER BY d.next_attempt_at, d.id
      LIMIT $1
      FOR UPDATE OF d SKIP LOCKED
    )
    UPDATE public.webhook_deliveries d
    SET lease_until = now() + $2 * interval '1 millisecond', attempts = d.attempts + 1, last_attempt_at = now()
    FROM due, public.webhook_endpoints e
    WHERE d.id = due.id AND e.id = d.endpoint_id
    RETURNING d.id::text, d.message_id, d.payload, d.attempts, d.created_at, e.id::text AS endpoint_id, e.app_id, e.url, e.secret,
              CASE WHEN e.previous_secret_until > now() THEN e.previous_secret END AS previous_secret`,

  delivered: `
    WITH d AS (
      UPDATE public.webhook_deliveries SET status = 'delivered', delivered_at = now(), lease_until = NULL, last_status = $2, last_error = NULL
      WHERE id = $1::bigint AND status = 'pending' RETURNING endpoint_id
    )
    UPDATE public.webhook_endpoints e SET failing_since = NULL FROM d WHERE e.id = d.endpoint_id AND e.failing_since IS NOT NULL`,

  /**
   * A failed attempt: retried later, or given up once the change is older than the maximum age.
   * An endpoint that has failed for longer than that is disabled.
   */
  failed: `
    WITH d AS (
      UPDATE public.webhook_deliveries SET
        status = CASE WHEN created_at < now() - $5 * interval '1 millisecond' THEN 'failed' ELSE 'pending' END,
        next_attempt_at = now() + $4 * interval '1 millisecond', lease_until = NULL, last_status = $2, last_error = $3
      WHERE id = $1::bigint AND status = 'pending' RETURNING endpoint_id, status
    )
    UPDATE public.webhook_endpoints e SET
      failing_since = coalesce(e.failing_since, now()),
      disabled_at = CASE WHEN e.failing_since < now() - $5 * interval '1 millisecond' THEN now() END,
      disabled_reason = CASE WHEN e.failing_since < now() - $5 * interval '1 millisecond'
                             THEN 'failing since ' || to_char(e.failing_since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') || ': ' || $3 END
    FROM d WHERE e.id = d.endpoint_id
    RETURNING d.status, e.disabled_at IS NOT NULL AS disabled`,

  /**
   * Deliveries kept for `webhooks deliveries` and redelivery: delivered ones for $1 ms, failed ones
   * for $2 ms; older ones go, a bounded number per call so a large backlog never makes a long lock.
   * A failed delivery goes with the newer delivered state of its row at the latest: kept alone, it
   * would look like the row's newest state to `redeliver`, which would send the receiver back in time.
   */
  prune: `
    DELETE FROM public.webhook_deliveries WHERE id IN (
      SELECT d.id FROM public.webhook_deliveries d
      WHERE (d.status = 'delivered' AND d.delivered_at < now() - $1 * interval '1 millisecond')
         OR (d.status = 'failed' AND (d.last_attempt_at < now() - $2 * interval '1 millisecond' OR EXISTS (
              SELECT 1 FROM public.webhook_deliveries n
              WHERE n.endpoint_id = d.endpoint_id AND n.row_key = d.row_key AND n.id > d.id
                AND n.status = 'delivered' AND n.delivered_at < now() - $1 * interval '1 millisecond')))
      LIMIT 10000)`,

  /**
   * Failed deliveries sent again (or the one named by $2): only a row's newest delivery, since an
   * older state sent after a newer one would leave a receiver that applies in arrival order behind.
   */
  redeliver: `
    UPDATE public.webhook_deliveries d SET status = 'pending', next_attempt_at = now(), lease_until = NULL, created_at = now(), delivered_at = NULL
    WHERE d.endpoint_id = $1::bigint AND ($2::bigint IS NULL AND d.status = 'failed' OR d.id = $2::bigint)
      AND NOT EXISTS (SELECT 1 FROM public.webhook_deliveries n WHERE n.endpoint_id = d.endpoint_id AND n.row_key = d.row_key AND n.id > d.id)
    RETURNING d.id`,

  /** Per failed delivery (or the one named), the newest delivery of the same row, if a newer one exists. */
  supersededBy: `
    SELECT d.id::text, max(n.id)::text AS newer FROM public.webhook_deliveries d
    JOIN public.webhook_deliveries n ON n.endpoint_id = d.endpoint_id AND n.row_key = d.row_key AND n.id > d.id
    WHERE d.endpoint_id = $1::bigint AND ($2::bigint IS NULL AND d.status = 'failed' OR d.id = $2::bigint)
    GROUP BY d.id`,

  /** Age of the oldest pending delivery per application (metrics). */
  oldestPending: `
    SELECT e.app_id, extract(epoch FROM now() - min(d.created_at))::float8 AS age
    FROM public.webhook_deliveries d JOIN public.webhook_endpoints e ON e.id = d.endpoint_id
    WHERE d.status = 'pending' GROUP BY e.app_id`,
};
