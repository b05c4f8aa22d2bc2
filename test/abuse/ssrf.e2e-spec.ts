import { jest } from '@jest/globals';
import fc from 'fast-check';
import { startTestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { expectEventually } from '../utils/expect-eventually.js';
import { project, txEvent } from '../utils/events.js';
import { runCli } from '../utils/processes.js';
import { startReceiver } from '../utils/webhook-receiver.js';
import type { WebhookSettings } from '../../src/config/app-config.js';
import { addEndpoint } from '../../src/webhooks/webhook-endpoints.js';
import { checkWebhookTarget, InternalTargetError } from '../../src/webhooks/webhook-target.js';

jest.setTimeout(180_000);

// Webhook targets pointing inward (server-side request forgery): refused when registered and again
// on every connection, after DNS, unless the host is listed in WEBHOOK_ALLOW_HOSTS; a refused
// delivery records a generic reason, never what a connection attempt would have told.
const SCALE = Number(process.env.ABUSE_SCALE ?? 1);
const RUNS = Math.max(1, Math.round(300 * SCALE));
const FAST = { WEBHOOK_POLL_MS: '50', WEBHOOK_RETRY_BASE_MS: '50', WEBHOOK_TIMEOUT_MS: '500' };
const GENERIC = 'target address not allowed';

/** The internal IPv4 ranges as first and last address (IANA special-purpose registry), written out. */
const INTERNAL_V4: [number, number][] = [
  [0x00000000, 0x00ffffff], // 0.0.0.0/8
  [0x0a000000, 0x0affffff], // 10/8
  [0x64400000, 0x647fffff], // 100.64/10
  [0x7f000000, 0x7fffffff], // 127/8
  [0xa9fe0000, 0xa9feffff], // 169.254/16
  [0xac100000, 0xac1fffff], // 172.16/12
  [0xc0000000, 0xc00000ff], // 192.0.0/24
  [0xc0a80000, 0xc0a8ffff], // 192.168/16
  [0xc6120000, 0xc613ffff], // 198.18/15
  [0xe0000000, 0xffffffff], // 224/4 and 240/4 (with 255.255.255.255)
];
const isInternalV4 = (n: number) => INTERNAL_V4.some(([first, last]) => n >= first && n <= last);
const dotted = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
const hex16 = (n: number) => `${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
/** Ways to write an IPv4 address in a URL host that a parser may take for it. */
const SPELLINGS: ((n: number) => string)[] = [
  dotted,
  (n) => String(n), // decimal
  (n) => `0x${n.toString(16)}`, // hex
  (n) => `0${n.toString(8)}`, // octal
  (n) => `${n >>> 24}.${n & 0xffffff}`, // a.b24
  (n) => `0x${(n >>> 24).toString(16)}.0${((n >>> 16) & 255).toString(8)}.${n & 0xffff}`, // hex.octal.b16
  (n) => `${dotted(n)}.`, // trailing dot
  (n) => `[::ffff:${dotted(n)}]`, // IPv4-mapped
  (n) => `[::ffff:${hex16(n)}]`,
  (n) => `[64:ff9b::${dotted(n)}]`, // NAT64
  (n) => `[64:ff9b::${hex16(n)}]`,
];

const settings = (allowHosts: string[]): WebhookSettings => ({
  deliveryEnabled: false,
  maxAgeMs: 60_000,
  timeoutMs: 500,
  retryBaseMs: 50,
  maxInFlight: 4,
  pollMs: 50,
  allowHosts,
});

describe('webhook targets pointing inward (SSRF)', () => {
  let db: TestDatabase;
  const closers: (() => Promise<unknown>)[] = [];

  beforeEach(async () => {
    db = await createTestDatabase('ssrf');
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
    await db?.drop();
  });

  const receiver = async () => {
    const r = await startReceiver();
    closers.push(() => r.close());
    return r;
  };
  const app = async (env: Record<string, string>) => {
    const api = await startTestApp({ databaseUrl: db.url, env: { ...FAST, ...env } });
    closers.push(() => api.close());
    return api;
  };
  const endpointCount = async () => ((await db.dataSource.query(`SELECT count(*)::int AS n FROM public.webhook_endpoints`)) as { n: number }[])[0].n;

  it('every spelling of an internal IPv4 address is refused, every public one taken (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xffffffff }), fc.constantFrom(...SPELLINGS), (n, spell) => {
        const url = `https://${spell(n)}:8443/hook`;
        if (isInternalV4(n)) expect(() => checkWebhookTarget(url, [])).toThrow(InternalTargetError);
        else expect(() => checkWebhookTarget(url, [])).not.toThrow();
      }),
      { numRuns: RUNS },
    );
    // and the edges of every range, which random draws rarely hit
    for (const [first, last] of INTERNAL_V4) {
      for (const spell of SPELLINGS) {
        for (const n of [first, last]) expect(() => checkWebhookTarget(`https://${spell(n)}/`, [])).toThrow(InternalTargetError);
        for (const n of [first - 1, last + 1].filter((m) => m >= 0 && m <= 0xffffffff && !isInternalV4(m)))
          expect(() => checkWebhookTarget(`https://${spell(n)}/`, [])).not.toThrow();
      }
    }
  });

  it('webhooks add refuses internal targets, literal or resolved, naming the problem; an allowlisted host is taken', async () => {
    const cli = (url: string, allow?: string) =>
      runCli(['webhooks', 'add', '--app', 'app-1', '--url', url], { DATABASE_URL: db.url, WEBHOOK_ALLOW_HOSTS: allow });
    const refusals: [string, string][] = [
      [
        'https://0x7f.1:8443/hook',
        "the webhook URL's host 127.0.0.1 is an internal address (loopback, private, link-local or reserved); list it in WEBHOOK_ALLOW_HOSTS to send there",
      ],
      ['https://[::ffff:169.254.169.254]/latest/meta-data/', "the webhook URL's host ::ffff:a9fe:a9fe is an internal address"],
      // a name: refused for what it resolves to (/etc/hosts here)
      [
        'https://localhost:8443/hook',
        "the webhook URL's host localhost resolves to an internal address (loopback, private, link-local or reserved); list it in WEBHOOK_ALLOW_HOSTS to send there",
      ],
    ];
    for (const [url, message] of refusals) {
      const refused = await cli(url);
      expect({ url, code: refused.code, stdout: refused.stdout }).toEqual({ url, code: 2, stdout: '' });
      expect(refused.stderr).toContain(message);
    }
    // listing a different host allows nothing here
    expect((await cli('https://localhost:8443/hook', '127.0.0.1')).stderr).toContain('host localhost resolves to an internal address');

    // the same function behind the CLI, over the other forms
    for (const url of [
      'https://127.0.0.1/',
      'https://[::1]/',
      'https://0.0.0.0/',
      'https://2130706433/',
      'https://0177.0.0.1/',
      'https://10.0.0.1/',
      'https://100.64.0.1/',
      'https://169.254.169.254/',
      'https://172.16.0.1/',
      'https://192.168.0.1/',
      'https://[fd00::1]/',
      'https://[fe80::1]/',
      'https://[ff02::1]/',
      'https://[64:ff9b::7f00:1]/',
      'https://255.255.255.255/',
    ]) {
      await expect(addEndpoint(db.dataSource, settings([]), { appId: 'app-1', url })).rejects.toThrow(InternalTargetError);
    }
    expect(await endpointCount()).toBe(0);

    const taken = await cli('https://localhost:8443/hook', 'localhost');
    expect(taken.code).toBe(0);
    const takenPublic = await cli('https://93.184.215.14/hook');
    expect(takenPublic.code).toBe(0);
    expect(await endpointCount()).toBe(2);
  });

  it('at delivery: a name resolving to loopback and stored internal addresses get no connection, and the error stays generic', async () => {
    const trap = await receiver();
    const control = await receiver();
    // Only 127.0.0.1, as written, is allowed: the control receiver gets its deliveries, while the same
    // server under another name (or another spelling of the address) is refused.
    const api = await app({ WEBHOOK_ALLOW_HOSTS: '127.0.0.1' });
    await addEndpoint(db.dataSource, api.config.webhooks, { appId: 'app-1', url: control.url });
    // Registered while their hosts were allowed: what a name rebound to loopback since, or a list
    // shortened since, leaves behind.
    const trapUrls = [`https://localhost:${trap.port}/hook`, `http://localhost:${trap.port}/hook`, `https://[::ffff:7f00:1]:${trap.port}/hook`];
    for (const url of trapUrls) await addEndpoint(db.dataSource, settings(['localhost', '::ffff:7f00:1']), { appId: 'app-1', url });
    await project(db.dataSource, [
      txEvent({ time: '2025-01-01T00:00:00Z', data: { transactionId: 'apple:t1', purchaseDate: '2025-01-01T00:00:00Z', applicationUsername: 'alice' } }),
    ]);

    const trapDeliveries = () =>
      db.dataSource.query(
        `SELECT e.url, d.attempts, d.last_status, d.last_error FROM public.webhook_deliveries d JOIN public.webhook_endpoints e ON e.id = d.endpoint_id
         WHERE e.url <> $1 AND d.event_type = 'customer.updated' ORDER BY e.id`,
        [control.url],
      ) as Promise<{ url: string; attempts: number; last_status: number | null; last_error: string | null }[]>;
    await expectEventually(async () => {
      expect(control.received).toHaveLength(2);
      const rows = await trapDeliveries();
      expect(rows.map((r) => ({ ...r, attempts: Math.min(r.attempts, 2) }))).toEqual(
        trapUrls.map((url) => ({
          url,
          attempts: 2,
          last_status: null,
          last_error: url.startsWith('http:') ? 'the webhook URL must use https (localhost is not listed in WEBHOOK_ALLOW_HOSTS)' : GENERIC,
        })),
      );
    }, 30_000);
    expect(trap.connections).toBe(0);
    expect(trap.received).toHaveLength(0);

    // Failing for longer than WEBHOOK_MAX_AGE: the next attempt disables them, with the same reason.
    await db.dataSource.query(`UPDATE public.webhook_endpoints SET failing_since = now() - interval '2 days' WHERE url <> $1`, [control.url]);
    await expectEventually(async () => {
      const endpoints = await db.dataSource.query(`SELECT disabled_reason FROM public.webhook_endpoints WHERE url <> $1 ORDER BY id`, [control.url]);
      expect(endpoints.map((e: { disabled_reason: string | null }) => e.disabled_reason?.replace(/^failing since \S+Z: /, ''))).toEqual(
        trapUrls.map((url) => (url.startsWith('http:') ? 'the webhook URL must use https (localhost is not listed in WEBHOOK_ALLOW_HOSTS)' : GENERIC)),
      );
    }, 30_000);
    expect(trap.connections).toBe(0);

    const env = { DATABASE_URL: db.url, WEBHOOK_ALLOW_HOSTS: '127.0.0.1' };
    const deliveries = await runCli(['webhooks', 'deliveries', '--id', '2'], env);
    expect(deliveries.stdout).toContain(`: - ${GENERIC}`);
    expect(deliveries.stdout).not.toMatch(/127\.0\.0\.1|localhost|ECONN|EPROTO|TLS|SSL|socket/i);
    const list = await runCli(['webhooks', 'list'], env);
    expect(list.stdout).toMatch(new RegExp(`^2\\tapp-1\\thttps://localhost:${trap.port}/hook\\tdisabled since \\S+ \\(failing since \\S+: ${GENERIC}\\)`, 'm'));
  });

  it('a host listed in WEBHOOK_ALLOW_HOSTS still receives, by name and over http', async () => {
    const hook = await receiver();
    const api = await app({ WEBHOOK_ALLOW_HOSTS: 'localhost' });
    const url = `http://localhost:${hook.port}/hook`;
    const added = await runCli(['webhooks', 'add', '--app', 'app-1', '--url', url], { DATABASE_URL: db.url, WEBHOOK_ALLOW_HOSTS: 'localhost' });
    expect(added.code).toBe(0);
    const secret = added.stdout.trim();
    await project(db.dataSource, [
      txEvent({ time: '2025-01-01T00:00:00Z', data: { transactionId: 'apple:t1', purchaseDate: '2025-01-01T00:00:00Z', applicationUsername: 'alice' } }),
    ]);
    await expectEventually(() => expect(hook.received).toHaveLength(2), 30_000);
    expect(hook.received.every((r) => hook.verify(secret, r))).toBe(true);
    expect(api.config.webhooks.allowHosts).toEqual(['localhost']);
  });
});
