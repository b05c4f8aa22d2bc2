import { gunzipSync, brotliDecompressSync } from 'node:zlib';
import { request } from 'node:http';
import { connect } from 'node:net';
import { loadConfig } from '../../src/config/app-config.js';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { project, txEvent } from '../utils/events.js';

/** The raw response, undecoded: fetch would hide the compression. */
function raw(url: string, headers: Record<string, string>): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('HTTP conventions (e2e): compression, CORS, HOST', () => {
  let db: TestDatabase;
  let api: TestApp;
  let cors: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase('http_conventions');
    await project(
      db.dataSource,
      Array.from({ length: 300 }, (_, i) =>
        txEvent({
          time: '2026-01-01T00:00:00Z',
          data: { transactionId: `apple:t${i}`, purchaseDate: '2026-01-01T00:00:00Z', applicationUsername: `u${i % 40}` },
        }),
      ),
    );
    api = await startTestApp({ databaseUrl: db.url });
    cors = await startTestApp({ databaseUrl: db.url, env: { CORS_ORIGINS: 'https://app.example.com, http://localhost:5173, capacitor://localhost' } });
  });
  afterAll(async () => {
    await api?.close();
    await cors?.close();
    await db?.drop();
  });

  it('compresses pages with brotli or gzip as the client asks, and leaves them alone otherwise', async () => {
    const url = `${api.baseUrl}/v2/transactions?limit=1000`;
    const auth = { authorization: `Bearer ${api.token('app-1')}` };
    const plain = await raw(url, auth);
    expect(plain.headers['content-encoding']).toBeUndefined();
    const gzip = await raw(url, { ...auth, 'accept-encoding': 'gzip' });
    expect(gzip.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gzip.body).equals(plain.body)).toBe(true);
    const br = await raw(url, { ...auth, 'accept-encoding': 'br, gzip' });
    expect(br.headers['content-encoding']).toBe('br');
    expect(brotliDecompressSync(br.body).equals(plain.body)).toBe(true);
    expect(br.body.length * 5).toBeLessThan(plain.body.length);
    expect(JSON.parse(plain.body.toString()).rows).toHaveLength(300);
  });

  it('answers CORS preflights only for the configured origins, and not at all by default', async () => {
    const preflight = (base: string, origin: string) =>
      fetch(`${base}/v2/customers`, {
        method: 'OPTIONS',
        headers: { origin, 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' },
      });
    const allowed = await preflight(cors.baseUrl, 'https://app.example.com');
    expect(allowed.status).toBe(204);
    expect(allowed.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    expect(allowed.headers.get('access-control-allow-headers')).toContain('authorization');
    expect((await preflight(cors.baseUrl, 'https://evil.example.com')).headers.get('access-control-allow-origin')).toBeNull();
    // an iOS Capacitor app's WebView (cordova-plugin-purchase's validator posts from there: docs/purchases.md)
    expect((await preflight(cors.baseUrl, 'capacitor://localhost')).headers.get('access-control-allow-origin')).toBe('capacitor://localhost');
    expect((await preflight(cors.baseUrl, 'ionic://localhost')).headers.get('access-control-allow-origin')).toBeNull();
    const get = await fetch(`${cors.baseUrl}/v2/customers`, { headers: { origin: 'http://localhost:5173', authorization: `Bearer ${cors.token('app-1')}` } });
    expect(get.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
    expect(get.headers.get('access-control-expose-headers')).toContain('x-request-id');
    expect((await preflight(api.baseUrl, 'https://app.example.com')).headers.get('access-control-allow-origin')).toBeNull();
  });

  it('marks every answer nosniff and no-store: pages, problems of every kind, probes, the raw 431 and 400 of the HTTP parser', async () => {
    const auth = { authorization: `Bearer ${api.token('app-1')}` };
    const cases: [string, Record<string, string>, number, string?][] = [
      ['/v2/customers', auth, 200],
      ['/v2/transactions?limit=1000', { ...auth, 'accept-encoding': 'gzip' }, 200],
      ['/v2/customers', {}, 401],
      ['/v2/transactions', { authorization: 'Bearer not-a-jwt' }, 401],
      ['/v2/transactions', { authorization: `Bearer ${api.token('app-1', ['customers:read'])}` }, 403],
      ['/v2/transactions?limit=<script>', auth, 400],
      ['/v2/customers?changedAfter=forged', auth, 400],
      ['/nothing-here', {}, 404],
      ['/v2/%zz', {}, 400],
      ['/health/live', {}, 200],
      ['/openapi.json', {}, 200],
      [`/v2/customers?applicationUsername=${'x'.repeat(300 * 1024)}`, auth, 431],
    ];
    for (const [path, headers, status] of cases) {
      const res = await raw(api.baseUrl + path, headers);
      expect({ path: path.slice(0, 60), status: res.status, nosniff: res.headers['x-content-type-options'], cache: res.headers['cache-control'] }).toEqual({
        path: path.slice(0, 60),
        status,
        nosniff: 'nosniff',
        cache: 'no-store',
      });
    }
    const post = await fetch(`${api.baseUrl}/v2/customers`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect({ status: post.status, nosniff: post.headers.get('x-content-type-options'), cache: post.headers.get('cache-control') }).toEqual({
      status: 405,
      nosniff: 'nosniff',
      cache: 'no-store',
    });
    // Not HTTP at all: Node's parser refuses it and the service's raw answer carries them too.
    const garbage = await new Promise<string>((resolve) => {
      const socket = connect(Number(new URL(api.baseUrl).port), '127.0.0.1', () => socket.write('NOT HTTP\r\n\r\n'));
      let text = '';
      socket.on('data', (d) => (text += d));
      socket.on('close', () => resolve(text));
    });
    expect(garbage).toMatch(/^HTTP\/1\.1 400 /);
    expect(garbage.toLowerCase()).toContain('x-content-type-options: nosniff\r\n');
    expect(garbage.toLowerCase()).toContain('cache-control: no-store\r\n');
  });

  it('validates HOST and CORS_ORIGINS at boot', () => {
    expect(loadConfig({}).host).toBe('0.0.0.0');
    expect(loadConfig({ HOST: '127.0.0.1' }).host).toBe('127.0.0.1');
    expect(() => loadConfig({ HOST: 'not a host' })).toThrow(/HOST must be an address or host name/);
    expect(() => loadConfig({ CORS_ORIGINS: 'app.example.com' })).toThrow(/CORS_ORIGINS must list origins/);
    expect(loadConfig({ CORS_ORIGINS: 'https://app.example.com/path' }).corsOrigins).toEqual(['https://app.example.com']);
    expect(loadConfig({ CORS_ORIGINS: 'Capacitor://localhost, ionic://localhost:8100' }).corsOrigins).toEqual([
      'capacitor://localhost',
      'ionic://localhost:8100',
    ]);
    expect(() => loadConfig({ CORS_ORIGINS: 'capacitor://' })).toThrow(/CORS_ORIGINS must list origins/);
  });
});
