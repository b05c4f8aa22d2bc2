import { jest } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { createAppleTestCa } from '../../src/store-notifications/apple/apple-test-ca.js';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { writeTempFile } from '../utils/processes.js';
import { postHead, rawExchange } from '../utils/raw-http.js';

// A client that sends its request a byte at a time holds a connection and a request slot: the
// README promises that a request not received within REQUEST_TIMEOUT_MS is answered 408 and its
// connection closed, for the request line and headers and for the body alike. Node's defaults held
// a trickled body 60-90 s and trickled headers up to 30 s past the timeout.

jest.setTimeout(60_000);
const TIMEOUT_MS = 1500;
/** Scheduling slack on a shared machine: the answer may reach the client this much after the deadline. */
const SLACK_MS = 300;

describe(`slow clients (e2e, REQUEST_TIMEOUT_MS=${TIMEOUT_MS})`, () => {
  let db: TestDatabase;
  let api: TestApp;
  let port: number;

  beforeAll(async () => {
    const ca = await createAppleTestCa();
    db = await createTestDatabase('slowclients');
    api = await startTestApp({
      databaseUrl: db.url,
      env: {
        REQUEST_TIMEOUT_MS: String(TIMEOUT_MS),
        APPLE_ROOT_CERTIFICATES: writeTempFile('apple-root.pem', new X509Certificate(ca.root).toString()),
        APPLE_APPS: 'app-1:com.example.slow:Sandbox',
      },
    });
    port = Number(new URL(api.baseUrl).port);
  });
  afterAll(async () => {
    await api?.close();
    await db?.drop();
  });

  const expectTimedOut = (r: Awaited<ReturnType<typeof rawExchange>>) => {
    expect({ status: r.status, closed: r.closed }).toEqual({ status: 408, closed: true });
    expect(r.answeredAfterMs).toBeLessThanOrEqual(TIMEOUT_MS + SLACK_MS);
    // It is the deadline that answered, not something sooner (Node checks every tenth of it).
    expect(r.answeredAfterMs).toBeGreaterThanOrEqual(TIMEOUT_MS * 0.8);
    expect(r.headers).toMatchObject({ 'content-type': 'application/problem+json', 'x-content-type-options': 'nosniff', 'cache-control': 'no-store' });
    expect(JSON.parse(r.body)).toMatchObject({ status: 408, code: 'bad_request' });
  };

  it('answers headers trickled at 1 byte/s with 408 within REQUEST_TIMEOUT_MS, and closes the connection', async () => {
    const head = 'GET /v2/customers HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer x\r\n\r\n';
    expectTimedOut(await rawExchange(port, { head: head[0], parts: [...head.slice(1)], everyMs: 1000, waitMs: TIMEOUT_MS * 4 }));
  });

  it('answers a body trickled at 1 byte/s with 408 within REQUEST_TIMEOUT_MS of the first byte, and closes the connection', async () => {
    const body = JSON.stringify({ signedPayload: 'a.b.c' });
    expectTimedOut(
      await rawExchange(port, { head: postHead('/v2/notifications/apple/app-1', body.length), parts: [...body], everyMs: 1000, waitMs: TIMEOUT_MS * 4 }),
    );
  });

  it('closes a connection that sends nothing within REQUEST_TIMEOUT_MS', async () => {
    const r = await rawExchange(port, { head: '', waitMs: TIMEOUT_MS * 4 });
    expect(r.closed).toBe(true);
    expect(r.closedAfterMs).toBeLessThanOrEqual(TIMEOUT_MS + SLACK_MS);
  });

  it('still takes a request whose body arrives in pieces within the timeout, and answers normally after the slow ones', async () => {
    const body = JSON.stringify({ signedPayload: 'a.b.c' });
    const parts = [body.slice(0, 10), body.slice(10, 20), body.slice(20)];
    const r = await rawExchange(port, {
      head: postHead('/v2/notifications/apple/app-1', body.length, { connection: 'close' }),
      parts,
      everyMs: 300,
      waitMs: TIMEOUT_MS * 4,
    });
    expect(r.status).toBe(400);
    expect(JSON.parse(r.body)).toMatchObject({ code: 'notification_unverified' });
    expect((await api.get('/v2/customers', api.token('app-1'))).status).toBe(200);
  });
});
