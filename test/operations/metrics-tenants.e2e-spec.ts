import { jest } from '@jest/globals';
import { addEndpoint } from '../../src/webhooks/webhook-endpoints.js';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { expectEventually } from '../utils/expect-eventually.js';
import { project, txEvent } from '../utils/events.js';
import { startReceiver } from '../utils/webhook-receiver.js';

jest.setTimeout(120_000);

// /metrics answers anyone: by default it names no tenant (application id), no customer and no URL.
const APP = 'tenant-7f3a9c-metrics';
const USER = 'user-metrics-5d21';
const FAST = { WEBHOOK_ALLOW_HOSTS: '127.0.0.1', WEBHOOK_POLL_MS: '50', WEBHOOK_RETRY_BASE_MS: '60000', WEBHOOK_TIMEOUT_MS: '500' };

describe('/metrics and tenants (e2e, real PostgreSQL, a webhook receiver on loopback)', () => {
  let db: TestDatabase;
  const closers: (() => Promise<unknown>)[] = [];

  beforeEach(async () => {
    db = await createTestDatabase('metricstenants');
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
    await db?.drop();
  });

  const app = async (env: Record<string, string> = {}): Promise<TestApp> => {
    const api = await startTestApp({ databaseUrl: db.url, env: { ...FAST, ...env } });
    closers.push(() => api.close());
    return api;
  };
  const scrape = async (api: TestApp) => {
    const res = await fetch(`${api.baseUrl}/metrics`);
    expect(res.status).toBe(200);
    return res.text();
  };
  const backlogLines = (text: string) => text.split('\n').filter((l) => l.startsWith('subscription_records_webhook_oldest_pending_delivery_seconds'));

  /** A delivery for APP is queued and stays pending: the receiver answers 500 and the next try is a minute away. */
  async function pendingDeliveryFor(api: TestApp) {
    const hook = await startReceiver(() => ({ status: 500 }));
    closers.push(() => hook.close());
    await addEndpoint(db.dataSource, api.config.webhooks, { appId: APP, url: `${hook.url}/hooks/${APP}` });
    await project(db.dataSource, [
      txEvent({
        app: APP,
        time: '2025-01-01T00:00:00Z',
        data: { transactionId: 'apple:m1', purchaseDate: '2025-01-01T00:00:00Z', expirationDate: '2030-01-01T00:00:00Z', applicationUsername: USER },
      }),
    ]);
    await expectEventually(() => expect(hook.received.length).toBeGreaterThan(0));
    // the API was used too: a page for the app, a name lookup, a path that matches no route
    expect((await api.get(`/v2/customers?applicationUsername=${USER}`, api.token(APP))).status).toBe(200);
    expect((await api.get(`/v2/${APP}/${USER}`, api.token(APP))).status).toBe(404);
    return hook;
  }

  it('by default: the webhook backlog is one series without an app label; no app id, username or URL anywhere', async () => {
    const api = await app();
    const hook = await pendingDeliveryFor(api);
    const text = await expectEventually(async () => {
      const t = await scrape(api);
      const lines = backlogLines(t);
      expect(lines).toEqual([expect.stringMatching(/^subscription_records_webhook_oldest_pending_delivery_seconds \d+(\.\d+)?(e[-+]\d+)?$/)]);
      expect(Number(lines[0].split(' ')[1])).toBeGreaterThan(0);
      return t;
    });
    for (const secret of [APP, USER, hook.url, new URL(hook.url).host, '127.0.0.1', `hooks/`])
      expect({ secret, found: text.includes(secret) }).toEqual({ secret, found: false });
    expect(text).not.toMatch(/\bapp="/);
  });

  it('METRICS_PER_APP=true brings the per-application series back', async () => {
    const api = await app({ METRICS_PER_APP: 'true' });
    expect(api.config.metricsPerApp).toBe(true);
    await pendingDeliveryFor(api);
    await expectEventually(async () => {
      const lines = backlogLines(await scrape(api));
      expect(lines).toEqual([expect.stringMatching(new RegExp(`^subscription_records_webhook_oldest_pending_delivery_seconds\\{app="${APP}"\\} \\d`))]);
    });
  });
});
