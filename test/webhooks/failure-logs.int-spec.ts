import { Writable } from 'node:stream';
import { createPino } from '../../src/common/logger.js';
import type { WebhookSettings } from '../../src/config/app-config.js';
import { FAILURE_LOG_INTERVAL_MS, WebhookSender } from '../../src/webhooks/send-deliveries.js';
import { webhooksSql } from '../../src/webhooks/webhooks.sql.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { startReceiver } from '../utils/webhook-receiver.js';

// An operator learns that an endpoint fails from the log (warn), without a line per attempt, and
// never sees the secret or a payload there (docs/operations.md, "Logs").
const SECRET = 'whsec_' + Buffer.from('a-secret-that-must-never-be-logged').toString('base64');
const settings: WebhookSettings = {
  deliveryEnabled: true,
  maxAgeMs: 3_600_000,
  timeoutMs: 2_000,
  retryBaseMs: 1,
  maxInFlight: 4,
  pollMs: 50,
  allowHosts: ['127.0.0.1'],
};

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase('webhook_failure_logs');
});
afterAll(() => db?.drop());

it('a failing endpoint: a warn line at its first failure, then at most one a minute with a count; one info line when it recovers', async () => {
  let up = false;
  const hook = await startReceiver(() => (up ? { status: 204 } : { status: 500, body: 'receiver says no' }));
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  let clock = 1_000_000;
  const sender = new WebhookSender(db.dataSource, settings, undefined, createPino('info', destination), () => clock);
  try {
    const [{ id: endpointId }] = await db.dataSource.query(
      `INSERT INTO public.webhook_endpoints (app_id, url, secret, customers_cursor, transactions_cursor) VALUES ('app-1', $1, $2, '0', '0') RETURNING id::text AS id`,
      [hook.url, SECRET],
    );
    const payload = JSON.stringify({ type: 'customer.updated', timestamp: '2025-01-01T00:00:00Z', data: { applicationUsername: 'payload-marker-alice' } });
    await db.dataSource.query(webhooksSql.queue, [endpointId, ['customer.updated'], ['customer:alice'], ['customer:alice'], [payload]]);
    const [{ id: deliveryId }] = await db.dataSource.query(`SELECT id::text FROM public.webhook_deliveries`);
    const attempt = async () => {
      await db.dataSource.query(`UPDATE public.webhook_deliveries SET next_attempt_at = now()`);
      expect(await sender.sendDue()).toBe(1);
      await sender.idle();
    };

    for (let i = 0; i < 3; i++) await attempt();
    expect(lines).toEqual([
      expect.objectContaining({
        level: 40,
        msg: 'webhook delivery failed; will retry',
        endpointId,
        deliveryId,
        attempt: 1,
        status: 500,
        error: 'HTTP 500: receiver says no',
      }),
    ]);

    clock += FAILURE_LOG_INTERVAL_MS;
    await attempt();
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatchObject({ level: 40, endpointId, deliveryId, attempt: 4, status: 500, failedSinceLastLine: 2 });

    up = true;
    await attempt();
    expect(lines).toHaveLength(3);
    expect(lines[2]).toMatchObject({ level: 30, msg: 'webhook endpoint delivering again', endpointId, failedSinceLastLine: 0 });

    const text = JSON.stringify(lines);
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain(SECRET.slice(6));
    expect(text).not.toContain('payload-marker-alice');
  } finally {
    await sender.close();
    await hook.close();
  }
});
