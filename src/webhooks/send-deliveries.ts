import type { DataSource } from 'typeorm';
import { Agent, fetch, type Response } from 'undici';
import type { WebhookSettings } from '../config/app-config.js';
import { preparedQuery } from '../database/prepared.js';
import type { Metrics } from '../metrics/metrics.js';
import { retryDelayMs } from './retry-schedule.js';
import { signedHeaders } from './webhook-signing.js';
import { checkWebhookTarget, InternalTargetError, TARGET_NOT_ALLOWED, webhookLookup } from './webhook-target.js';
import { webhooksSql } from './webhooks.sql.js';

type Claimed = {
  id: string;
  message_id: string;
  payload: string;
  attempts: number;
  created_at: Date;
  endpoint_id: string;
  app_id: string;
  url: string;
  secret: string;
  previous_secret: string | null;
};
type Attempt = { ok: true; status: number } | { ok: false; status: number | null; error: string };

/** What is kept of a receiver's answer: enough to say why it failed, never the whole body. */
const EXCERPT_BYTES = 256;
/** A claimed delivery is someone else's to retry once its attempt can no longer be running. */
const LEASE_MARGIN_MS = 5_000;
/** A failing endpoint is logged on its first failure, then at most once per this interval, with a count. */
export const FAILURE_LOG_INTERVAL_MS = 60_000;

/** Where delivery failures are reported (pino's and Nest's loggers both fit). */
export type DeliveryLog = { warn(o: Record<string, unknown>): void; info(o: Record<string, unknown>): void };

/**
 * Failures at warn, per endpoint: the first one at once, then one line a minute at most saying how
 * many failed since; one info line when the endpoint takes a delivery again. Endpoint and delivery
 * ids, status and the stored error only: never the secret, never the payload.
 */
class FailureLog {
  private readonly endpoints = new Map<string, { loggedAt: number; unlogged: number }>();

  constructor(
    private readonly log: DeliveryLog,
    private readonly now: () => number,
  ) {}

  failed(d: { endpoint_id: string; id: string; attempts: number }, status: number | null, error: string, outcome: string, disabled: boolean): void {
    const seen = this.endpoints.get(d.endpoint_id);
    const now = this.now();
    if (seen && now - seen.loggedAt < FAILURE_LOG_INTERVAL_MS && outcome === 'retry' && !disabled) {
      seen.unlogged++;
      return;
    }
    this.log.warn({
      msg: disabled
        ? 'webhook endpoint disabled: failing for longer than WEBHOOK_MAX_AGE'
        : outcome === 'failed'
          ? 'webhook delivery given up (older than WEBHOOK_MAX_AGE)'
          : 'webhook delivery failed; will retry',
      endpointId: d.endpoint_id,
      deliveryId: d.id,
      attempt: d.attempts,
      status,
      error,
      ...(seen ? { failedSinceLastLine: seen.unlogged } : {}),
    });
    this.endpoints.set(d.endpoint_id, { loggedAt: now, unlogged: 0 });
  }

  delivered(endpointId: string): void {
    const seen = this.endpoints.get(endpointId);
    if (!seen) return;
    this.endpoints.delete(endpointId);
    this.log.info({ msg: 'webhook endpoint delivering again', endpointId, failedSinceLastLine: seen.unlogged });
  }
}

/**
 * Claims due deliveries and sends them, at most `maxInFlight` at a time per instance. State lives
 * in PostgreSQL: a crash mid-attempt leaves a lease that expires, and the delivery is sent again
 * (at least once; receivers dedupe on webhook-id).
 */
export class WebhookSender {
  private readonly inFlight = new Set<Promise<void>>();
  /** Every connection resolves its host through webhookLookup: no internal address, even after DNS changes. */
  private readonly agent: Agent;
  private readonly failures?: FailureLog;

  constructor(
    private readonly db: DataSource,
    private readonly settings: WebhookSettings,
    private readonly metrics?: Metrics,
    log?: DeliveryLog,
    now: () => number = Date.now,
  ) {
    this.agent = new Agent({ connect: { lookup: webhookLookup(settings.allowHosts) } });
    if (log) this.failures = new FailureLog(log, now);
  }

  /** Claims what it has room for and starts sending; returns how many it claimed. */
  async sendDue(): Promise<number> {
    const room = this.settings.maxInFlight - this.inFlight.size;
    if (room <= 0) return 0;
    const claimed = await preparedQuery<Claimed>(this.db, 'webhook-claim', webhooksSql.claim, [room, this.settings.timeoutMs + LEASE_MARGIN_MS]);
    for (const delivery of claimed) {
      const sending: Promise<void> = this.send(delivery).finally(() => this.inFlight.delete(sending));
      this.inFlight.add(sending);
    }
    return claimed.length;
  }

  /** Resolves once the attempts under way have ended (each ends within the attempt timeout). */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  /** Waits for the attempts under way (each ends within the attempt timeout), then closes the connections. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
    await this.agent.close();
  }

  private async send(d: Claimed): Promise<void> {
    const started = performance.now();
    const attempt = await this.attempt(d);
    const outcomeFor = (given: 'delivered' | 'retry' | 'failed') => {
      this.metrics?.webhookDeliveries.inc({ outcome: given });
      this.metrics?.webhookAttemptDuration.observe({ outcome: given }, (performance.now() - started) / 1000);
    };
    try {
      if (attempt.ok) {
        await preparedQuery(this.db, 'webhook-delivered', webhooksSql.delivered, [d.id, attempt.status]);
        outcomeFor('delivered');
        this.failures?.delivered(d.endpoint_id);
        return;
      }
      const [result] = await preparedQuery<{ status: string; disabled: boolean }>(this.db, 'webhook-failed', webhooksSql.failed, [
        d.id,
        attempt.status,
        attempt.error,
        retryDelayMs(d.attempts, this.settings.retryBaseMs),
        this.settings.maxAgeMs,
      ]);
      const outcome = result?.status === 'failed' ? 'failed' : 'retry';
      outcomeFor(outcome);
      this.failures?.failed(d, attempt.status, attempt.error, outcome, result?.disabled === true);
    } catch {
      // PostgreSQL away: the lease expires and the delivery is attempted again.
    }
  }

  private async attempt(d: Claimed): Promise<Attempt> {
    try {
      const target = checkWebhookTarget(d.url, this.settings.allowHosts);
      const secrets = d.previous_secret ? [d.secret, d.previous_secret] : [d.secret];
      const response = await fetch(target, {
        method: 'POST',
        dispatcher: this.agent,
        body: d.payload,
        redirect: 'manual',
        signal: AbortSignal.timeout(this.settings.timeoutMs),
        headers: {
          'content-type': 'application/json',
          'user-agent': 'subscription-records-webhooks/1',
          ...signedHeaders(d.message_id, new Date(), d.payload, secrets),
        },
      });
      const excerpt = await readExcerpt(response);
      if (response.status >= 200 && response.status < 300) return { ok: true, status: response.status };
      const redirect = response.status >= 300 && response.status < 400 ? ' (redirects are not followed)' : '';
      return { ok: false, status: response.status, error: `HTTP ${response.status}${redirect}${excerpt ? `: ${excerpt}` : ''}` };
    } catch (error) {
      const e = error as Error & { cause?: Error };
      if (e instanceof InternalTargetError || e.cause instanceof InternalTargetError) return { ok: false, status: null, error: TARGET_NOT_ALLOWED };
      const why = e.name === 'TimeoutError' ? `no response within ${this.settings.timeoutMs} ms` : (e.cause?.message ?? e.message);
      return { ok: false, status: null, error: why };
    }
  }
}

async function readExcerpt(response: Response): Promise<string> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < EXCERPT_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.length;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return Buffer.concat(chunks).subarray(0, EXCERPT_BYTES).toString('utf8').toWellFormed().replace(/\s+/g, ' ').trim();
}
