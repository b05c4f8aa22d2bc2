import { jest } from '@jest/globals';
import fc from 'fast-check';
import { randomUUID, sign, X509Certificate } from 'node:crypto';
import { Writable } from 'node:stream';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createPino } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/app-config.js';
import { createHttpApp } from '../../src/http-app.js';
import { createAppleTestCa, signAppleJws, type AppleTestCa } from '../../src/store-notifications/apple/apple-test-ca.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { startGooglePlayMock } from '../utils/google-play-mock.js';
import { writeTempFile } from '../utils/processes.js';
import { chunk, postHead, rawExchange } from '../utils/raw-http.js';
import { TEST_SECRET } from '../utils/app.js';

// The store notification routes take no credentials but a store's signature (Apple) or an OIDC token
// checked after the body (Google): what anyone can send them must be refused cheaply. An unknown
// application, another content type or a declared length over the route's limit is refused before
// a byte of the body is read; a body over the limit while it is read; a body shaped like no
// notification (deep, or thousands of entries) before JSON.parse. No refusal carries a JavaScript
// error's text, and each is logged at warn with its reason, not the body.

jest.setTimeout(120_000);
const SCALE = Number(process.env.ABUSE_SCALE ?? 1);
const BUNDLE = 'com.example.abuse';
const PACKAGE = 'com.example.abuse.game';
const AUDIENCE = 'https://records.example.com/v2/notifications/google/app-1';
/** The limits docs/events/apple.md and google.md document (not read from the code under test). */
const APPLE_LIMIT = 64 * 1024;
const GOOGLE_LIMIT = 16 * 1024;
/** JavaScript's own error texts, which a problem must never carry. */
const JS_ERROR_TEXT =
  /Cannot read propert|is not a function|Unexpected token|is not valid JSON|undefined is not|null is not|TypeError|SyntaxError|RangeError|at position \d/;

const b64u = (text: string | Buffer) => Buffer.from(text).toString('base64url');
/** A JWS over any payload text (jsonwebtoken signs objects only), with the test CA's chain. */
function signRaw(ca: AppleTestCa, payloadText: string): string {
  const head = b64u(JSON.stringify({ alg: 'ES256', x5c: [ca.leaf, ca.intermediate, ca.root].map((c) => c.toString('base64')) }));
  const body = b64u(payloadText);
  return `${head}.${body}.${b64u(sign('sha256', Buffer.from(`${head}.${body}`), { key: ca.leafKey, dsaEncoding: 'ieee-p1363' }))}`;
}
const manyKeys = (bytes: number) => {
  let s = '{';
  for (let i = 0; s.length < bytes - 40; i++) s += `"k${i}":0,`;
  return `${s}"signedPayload":"x"}`;
};
const deepArrays = (bytes: number) => '['.repeat(bytes / 2) + ']'.repeat(bytes / 2);

describe('hostile bodies on the store notification routes (e2e, real PostgreSQL)', () => {
  let db: TestDatabase;
  let app: NestFastifyApplication;
  let google: Awaited<ReturnType<typeof startGooglePlayMock>>;
  let ca: AppleTestCa;
  let port: number;
  let base: string;
  const logLines: string[] = [];

  beforeAll(async () => {
    ca = await createAppleTestCa();
    google = await startGooglePlayMock();
    db = await createTestDatabase('abusebodies');
    const config = loadConfig({
      NODE_ENV: 'test',
      DATABASE_URL: db.url,
      JWT_SECRET: TEST_SECRET,
      CONSUMER_ENABLED: 'false',
      DOCS_UI_ENABLED: 'false',
      APPLE_ROOT_CERTIFICATES: writeTempFile('apple-root.pem', new X509Certificate(ca.root).toString()),
      APPLE_APPS: `app-1:${BUNDLE}:Sandbox`,
      GOOGLE_APPS: `app-1:${PACKAGE}`,
      GOOGLE_PUBSUB_AUDIENCE: AUDIENCE,
      GOOGLE_PUBSUB_JWKS_URI: google.jwksUri,
      GOOGLE_SERVICE_ACCOUNT_FILE: writeTempFile('play-key.json', google.serviceAccountKey),
      GOOGLE_API_BASE_URL: google.base,
      GOOGLE_API_SELF_SIGNED_JWT: 'true',
    });
    const sink = new Writable({
      write(line, _, done) {
        logLines.push(String(line));
        done();
      },
    });
    app = await createHttpApp({ config, database: { url: db.url, mode: 'external', stop: async () => undefined }, pino: createPino('info', sink) });
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.getHttpServer().address() as { port: number }).port;
    base = `http://127.0.0.1:${port}`;
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
    await google?.close();
  });

  const post = async (path: string, body: string | Buffer, headers: Record<string, string> = {}) => {
    const res = await fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    const text = await res.text();
    return { status: res.status, type: res.headers.get('content-type') ?? '', text, json: JSON.parse(text) as { code?: string; detail?: string } };
  };
  const expectProblem = (r: { status: number; type: string; text: string }, status: number, code?: string) => {
    expect({ status: r.status, type: r.type }).toEqual({ status, type: expect.stringContaining('application/problem+json') });
    if (code) expect(JSON.parse(r.text)).toMatchObject({ code });
    expect(r.text).not.toMatch(JS_ERROR_TEXT);
  };
  const pushToken = () => `Bearer ${google.pushToken({ audience: AUDIENCE })}`;

  describe.each([
    ['apple', APPLE_LIMIT],
    ['google', GOOGLE_LIMIT],
  ])('%s', (store, limit) => {
    it('answers an unconfigured application 404 on the headers alone, and closes the connection', async () => {
      // A megabyte announced, ten bytes sent: the answer cannot wait for the rest.
      const r = await rawExchange(port, { head: postHead(`/v2/notifications/${store}/app-unknown`, 1_000_000), parts: ['{"signedPay'], waitMs: 3000 });
      expect({ status: r.status, closed: r.closed }).toEqual({ status: 404, closed: true });
      expect(JSON.parse(r.body)).toMatchObject({ code: 'not_found' });
    });

    it(`answers a declared length over ${limit} bytes 413 before reading the body`, async () => {
      const r = await rawExchange(port, { head: postHead(`/v2/notifications/${store}/app-1`, limit + 1), parts: ['{'], waitMs: 3000 });
      expect({ status: r.status, closed: r.closed }).toEqual({ status: 413, closed: true });
      expect(JSON.parse(r.body).detail).toContain(String(limit));
    });

    it('answers another content type 415 before reading the body', async () => {
      const r = await rawExchange(port, {
        head: postHead(`/v2/notifications/${store}/app-1`, 50_000, { 'content-type': 'text/plain' }),
        parts: ['x'],
        waitMs: 3000,
      });
      expect({ status: r.status, closed: r.closed }).toEqual({ status: 415, closed: true });
    });

    it('stops reading a chunked body at the limit: 413', async () => {
      const piece = chunk(`"${'a'.repeat(4094)}",`);
      const pieces = Array.from({ length: Math.ceil((limit * 4) / 4096) }, () => piece);
      const r = await rawExchange(port, {
        head: postHead(`/v2/notifications/${store}/app-1`, undefined, store === 'google' ? { authorization: pushToken() } : {}),
        parts: [chunk('['), ...pieces],
        everyMs: 2,
        waitMs: 5000,
      });
      expect(r.status).toBe(413);
      expect(JSON.parse(r.body)).toMatchObject({ status: 413 });
    });

    it('refuses a deep body and a body of thousands of entries before parsing it, naming the reason', async () => {
      const headers: Record<string, string> = store === 'google' ? { authorization: pushToken() } : {};
      const deep = await post(`/v2/notifications/${store}/app-1`, deepArrays(limit - 2), headers);
      expectProblem(deep, 400, 'notification_unverified');
      expect(deep.json.detail).toMatch(/nests deeper than 16 levels/);
      const wide = await post(`/v2/notifications/${store}/app-1`, manyKeys(limit - 2), headers);
      expectProblem(wide, 400, 'notification_unverified');
      expect(wide.json.detail).toMatch(/more than 512 entries/);
    });
  });

  it('takes a genuine Apple notification near the limit (room for Apple-size chains)', async () => {
    // A TEST notification padded with an unknown field to 60 KB: Apple's real ones are 15-25 KB.
    const payload = {
      notificationType: 'TEST',
      notificationUUID: randomUUID(),
      version: '2.0',
      signedDate: Date.now(),
      data: { bundleId: BUNDLE, environment: 'Sandbox' },
      padding: 'p'.repeat(44_000),
    };
    const body = JSON.stringify({ signedPayload: signAppleJws(ca, payload) });
    expect(body.length).toBeGreaterThan(58_000);
    expect(body.length).toBeLessThan(APPLE_LIMIT);
    const r = await post('/v2/notifications/apple/app-1', body);
    expect({ status: r.status, body: r.json }).toEqual({ status: 200, body: { status: 'acknowledged', events: 0 } });
  });

  it('never echoes a JavaScript error: a JWS whose data is null or whose payload is null, a Pub/Sub data that is not JSON', async () => {
    // Apple's library reads a property of the null data: a TypeError it reports as VERIFICATION_FAILURE.
    const nullData = await post(
      '/v2/notifications/apple/app-1',
      JSON.stringify({ signedPayload: signRaw(ca, JSON.stringify({ notificationType: 'TEST', notificationUUID: 'u', signedDate: Date.now(), data: null })) }),
    );
    expectProblem(nullData, 400, 'notification_unverified');
    expect(nullData.json.detail).toMatch(/^signedPayload failed verification: VERIFICATION_FAILURE \(/);
    const nullPayload = await post('/v2/notifications/apple/app-1', JSON.stringify({ signedPayload: signRaw(ca, 'null') }));
    expectProblem(nullPayload, 400, 'notification_unverified');
    const notJson = await post(
      '/v2/notifications/google/app-1',
      JSON.stringify({ message: { data: Buffer.from('{not json').toString('base64'), messageId: '1' } }),
      { authorization: pushToken() },
    );
    expectProblem(notJson, 400, 'notification_unverified');
    const nullMessage = await post(
      '/v2/notifications/google/app-1',
      JSON.stringify({ message: { data: Buffer.from('null').toString('base64'), messageId: '2' } }),
      { authorization: pushToken() },
    );
    expectProblem(nullMessage, 400, 'notification_unverified');
    const proto = await post('/v2/notifications/apple/app-1', '{"__proto__":{"polluted":1},"signedPayload":"a.b.c"}');
    expectProblem(proto, 400, 'bad_request');
    const broken = await post('/v2/notifications/apple/app-1', '{"signedPayload": "a.b.c"');
    expectProblem(broken, 400, 'bad_request');
  });

  it("logs each refusal at warn with its reason and the library's cause, never the body", async () => {
    logLines.length = 0;
    const marker = `secret-body-marker-${randomUUID()}`;
    await post(
      '/v2/notifications/apple/app-1',
      JSON.stringify({ signedPayload: signRaw(ca, JSON.stringify({ notificationType: 'TEST', signedDate: Date.now(), data: null })), marker }),
    );
    await post('/v2/notifications/apple/app-1', JSON.stringify({ nothing: marker }));
    await rawExchange(port, { head: postHead('/v2/notifications/google/app-unknown', 20), parts: [`"${marker}"`], waitMs: 2000 });
    const refusals = logLines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'request refused');
    expect(refusals.map((l) => [l.level, l.status, l.code])).toEqual([
      [40, 400, 'notification_unverified'],
      [40, 400, 'notification_unverified'],
      [40, 404, 'not_found'],
    ]);
    expect(refusals[0]).toMatchObject({ reason: expect.stringContaining('VERIFICATION_FAILURE'), cause: expect.stringMatching(/null/) });
    expect(refusals[1]).toMatchObject({ reason: expect.stringContaining('signedPayload string') });
    expect(logLines.join('')).not.toContain(marker);
  });

  it(`fuzz: any bytes under any content type get a 4xx problem without JavaScript error text, and the routes answer after (${Math.round(60 * SCALE)} runs)`, async () => {
    const bodies = fc.oneof(
      fc.json(),
      fc.string({ maxLength: 400 }),
      fc.uint8Array({ maxLength: 400 }).map((a) => Buffer.from(a)),
      fc.jsonValue({ maxDepth: 20 }).map((v) => JSON.stringify({ signedPayload: v, message: v })),
      fc.constantFrom(
        '{"signedPayload":null}',
        '{"message":null}',
        '{"message":{"data":7,"messageId":[]}}',
        '[]',
        'null',
        '"x"',
        '{"__proto__":1}',
        '{"constructor":{"prototype":{}}}',
      ),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('apple', 'google'),
        bodies,
        fc.constantFrom('application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded', 'application/jsonx'),
        async (store, body, type) => {
          const res = await fetch(`${base}/v2/notifications/${store}/app-1`, {
            method: 'POST',
            headers: { 'content-type': type, ...(store === 'google' ? { authorization: pushToken() } : {}) },
            body,
          });
          const text = await res.text();
          if (res.status < 400 || res.status >= 500) throw new Error(`${res.status} for ${type} ${String(body).slice(0, 80)}: ${text}`);
          expect(res.headers.get('content-type')).toContain('application/problem+json');
          expect(text).not.toMatch(JS_ERROR_TEXT);
        },
      ),
      { numRuns: Math.round(60 * SCALE) },
    );
    const ok = await post(
      '/v2/notifications/apple/app-1',
      JSON.stringify({
        signedPayload: signAppleJws(ca, {
          notificationType: 'TEST',
          notificationUUID: randomUUID(),
          version: '2.0',
          signedDate: Date.now(),
          data: { bundleId: BUNDLE, environment: 'Sandbox' },
        }),
      }),
    );
    expect(ok.status).toBe(200);
  });
});
