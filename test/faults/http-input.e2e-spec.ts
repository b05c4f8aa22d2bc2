import { jest } from '@jest/globals';
import fc from 'fast-check';
import jwt from 'jsonwebtoken';
import { Writable } from 'node:stream';
import { createPino } from '../../src/common/logger.js';
import { startTestApp, TEST_SECRET, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { project, txEvent } from '../utils/events.js';

// Every byte sequence in a query, a header or a token claim gets a 4xx problem+json or a correct
// answer, never a 5xx; and the service answers normally afterwards.

jest.setTimeout(180_000);
const RUNS = Number(process.env.FUZZ_RUNS ?? 150);

describe('HTTP input (e2e, real PostgreSQL)', () => {
  let db: TestDatabase;
  let api: TestApp;
  let token: string;

  beforeAll(async () => {
    db = await createTestDatabase('httpin');
    api = await startTestApp({ databaseUrl: db.url });
    token = api.token('app-1');
    await project(db.dataSource, [
      txEvent({
        time: '2024-01-01T00:00:00Z',
        data: { transactionId: 'apple:t1', applicationUsername: 'alice@example.com', purchaseDate: '2024-01-01T00:00:00Z' },
      }),
      txEvent({ time: '0030-06-01T00:00:00Z', data: { transactionId: 'apple:old', purchaseDate: '0030-06-01T00:00:00Z' } }),
    ]);
  });
  afterAll(async () => {
    await api?.close();
    await db?.drop();
  });

  const raw = async (path: string, headers: Record<string, string> = { authorization: `Bearer ${token}` }) => {
    const res = await fetch(api.baseUrl + path, { headers });
    const text = await res.text();
    return { status: res.status, type: res.headers.get('content-type') ?? '', text, headers: res.headers };
  };
  const expectProblem = (r: { status: number; type: string; text: string }, status: number, code?: string) => {
    expect(r.status).toBe(status);
    expect(r.type).toContain('application/problem+json');
    if (code) expect(JSON.parse(r.text)).toMatchObject({ status, code });
  };

  it('refuses a NUL in applicationUsername with 400, naming the parameter', async () => {
    expectProblem(await raw('/v2/customers?applicationUsername=al%00ice'), 400, 'invalid_parameter');
  });

  it.each(['__proto__=1', 'toString=1', 'constructor=1', 'hasOwnProperty=x', '__proto__%5Bx%5D=1'])('refuses %s as an unknown parameter', async (q) => {
    expectProblem(await raw(`/v2/transactions?${q}`), 400, 'invalid_parameter');
    expectProblem(await raw(`/v2/customers?${q}`), 400, 'invalid_parameter');
  });

  it('reads years below 100 literally, and years 0000 and 9999 answer', async () => {
    const r = await api.get('/v2/transactions?startdate=0030-01-01T00:00:00Z&enddate=0031-01-01T00:00:00Z', token);
    expect(r.body.rows.map((t: { transactionId: string }) => t.transactionId)).toEqual(['apple:old']);
    expect((await api.get('/v2/transactions?startdate=0000-01-01&enddate=9999-12-31T23:59:59-02:00', token)).body.paging.total).toBe(2);
    expect((await api.get('/v2/transactions?enddate=0000-06-01', token)).body.paging.total).toBe(0);
  });

  it('takes the documented maximum: 1000 e-mail-length usernames', async () => {
    const names = Array.from({ length: 1000 }, (_, i) => encodeURIComponent(`customer.number-${String(i).padStart(4, '0')}@example-domain.com`));
    names[0] = encodeURIComponent('alice@example.com');
    const r = await raw(`/v2/customers?applicationUsername=${names.join(',')}`);
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text).paging).toEqual({ skip: 0, limit: 1000, total: 1 });
  });

  it('answers an over-long request with a problem+json 431', async () => {
    const r = await raw(`/v2/customers?applicationUsername=${'x'.repeat(300 * 1024)}`);
    expectProblem(r, 431);
  });

  // The router refuses these before any route runs; its own answers were raw JSON (414
  // FST_ERR_MAX_PARAM_LENGTH, 400 FST_ERR_BAD_URL with its message).
  it.each([
    ['over the router limit', 'x'.repeat(2000)],
    ['over 512 bytes, within the router limit', 'x'.repeat(600)],
    ['invalid UTF-8', 'a%C3%28'],
    ['a lone surrogate', 'a%ED%A0%80'],
    ['a stray percent sign', 'a%zz'],
  ])('DELETE /v2/customers/{applicationUsername} %s: 400 invalid_parameter naming it, as problem+json', async (_, name) => {
    const eraser = api.token('app-1', ['customers:erase']);
    const res = await fetch(`${api.baseUrl}/v2/customers/${name}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${eraser}`, 'x-request-id': 'path-fault-1' },
    });
    const text = await res.text();
    expectProblem({ status: res.status, type: res.headers.get('content-type') ?? '', text }, 400, 'invalid_parameter');
    const body = JSON.parse(text);
    expect(body.parameter).toBe('applicationUsername');
    expect(body.detail).toContain('512 UTF-8 bytes');
    expect(text).not.toContain('FST_');
    expect(text).not.toContain('valid url component');
    expect(res.headers.get('x-request-id')).toBe('path-fault-1');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('cache-control')).toBe('no-store');
  });

  it.each([
    ['/v2/transactions?limit=1&limit=2', 'limit', 'limit must be given once; it is given twice'],
    ['/v2/customers?skip=0&skip=0&skip=0', 'skip', 'skip must be given once; it is given 3 times'],
    ['/v2/customers?status=active&status=expired', 'status', 'status must be given once; it is given twice'],
  ])('%s: says the parameter is repeated', async (path, parameter, detail) => {
    const r = await raw(path);
    expectProblem(r, 400, 'invalid_parameter');
    expect(JSON.parse(r.text)).toMatchObject({ parameter, detail });
  });

  it.each([
    ['/v2/transactions?startdate=2024-03-01T02:00:00+02:00', 'startdate'],
    ['/v2/customers?expiresAfter=2024-03-01T02:00:00+02:00', 'expiresAfter'],
  ])('%s: an unencoded + gets a hint showing %%2B', async (path, parameter) => {
    const r = await raw(path);
    expectProblem(r, 400, 'invalid_parameter');
    const body = JSON.parse(r.text);
    expect(body.parameter).toBe(parameter);
    expect(body.detail).toContain('2024-03-01T02:00:00%2B02:00');
    expect(body.detail).not.toContain('+02:00');
    // and sent encoded, the same date is taken
    expect((await raw(path.replace('+', '%2B'))).status).toBe(200);
  });

  it('refuses tokens without exp, and tokens whose app claim holds a NUL', async () => {
    const noExp = jwt.sign({ app: 'app-1', scope: 'customers:read transactions:read' }, TEST_SECRET, { algorithm: 'HS256' });
    const r1 = await raw('/v2/customers', { authorization: `Bearer ${noExp}` });
    expectProblem(r1, 401, 'token_invalid');
    expect(JSON.parse(r1.text).detail).toContain('"exp"');
    const nul = jwt.sign({ app: 'app\u00001', scope: 'customers:read' }, TEST_SECRET, { algorithm: 'HS256', expiresIn: 60 });
    expectProblem(await raw('/v2/customers', { authorization: `Bearer ${nul}` }), 401, 'token_invalid');
  });

  it('fuzz: query strings, headers and claims never give a 5xx, 4xx are problem+json, and the service answers after', async () => {
    const chars = fc.constantFrom(
      'a',
      'Z',
      '0',
      '%',
      '%00',
      '%2C',
      ',',
      '&',
      '=',
      '+',
      '%C3%A9',
      '%ED%A0%80',
      '%FF',
      '\u00e9',
      '[',
      ']',
      '__proto__',
      'toString',
      ';',
      "'",
      '"',
      '\\',
      '..',
      '-',
      'T',
      ':',
    );
    const value = fc.array(chars, { maxLength: 12 }).map((a) => a.join(''));
    const name = fc.constantFrom(
      'skip',
      'limit',
      'startdate',
      'enddate',
      'applicationUsername',
      '__proto__',
      'constructor',
      'toString',
      'x',
      '',
      '%00',
      'skip%00',
    );
    const query = fc.array(fc.tuple(name, value), { maxLength: 4 }).map((pairs) => pairs.map(([k, v]) => `${k}=${v}`).join('&'));
    const claim = fc.oneof(
      fc.string(),
      fc.constantFrom('app-1', 'app\u00001', '\ud800', 'a'.repeat(300), ''),
      fc.integer(),
      fc.constant(null),
      fc.array(fc.string()),
    );
    const tokenArb = fc.oneof(
      fc.constant(token),
      fc
        .record({ app: claim, scope: fc.oneof(fc.constant('customers:read transactions:read'), fc.string(), fc.integer()) })
        .map((claims) => jwt.sign(claims as object, TEST_SECRET, { algorithm: 'HS256', expiresIn: 60 })),
      fc.constantFrom('garbage', 'a.b.c', '', 'eyJhbGciOiJub25lIn0.eyJhcHAiOiJhcHAtMSJ9.'),
    );
    const header = fc.oneof(fc.constant(undefined), fc.stringMatching(/^[\x21-\x7e]{0,80}$/));
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('/v2/customers', '/v2/transactions'), query, tokenArb, header, async (path, q, t, requestId) => {
        const headers: Record<string, string> = { authorization: `Bearer ${t}` };
        if (requestId !== undefined) headers['x-request-id'] = requestId;
        const r = await raw(`${path}?${q}`, headers);
        if (r.status >= 500) throw new Error(`${r.status} for ${path}?${q}: ${r.text}`);
        if (r.status >= 400) expect(r.type).toContain('application/problem+json');
      }),
      { numRuns: RUNS },
    );
    expect((await api.get('/v2/transactions', token)).status).toBe(200);
  });
});

describe('request logs', () => {
  it('never contain a token sent as access_token, nor usernames from the query', async () => {
    const db = await createTestDatabase('httplog');
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const { createHttpApp } = await import('../../src/http-app.js');
    const { loadConfig } = await import('../../src/config/app-config.js');
    const config = loadConfig({ NODE_ENV: 'test', DATABASE_URL: db.url, JWT_SECRET: TEST_SECRET, CONSUMER_ENABLED: 'false', DOCS_UI_ENABLED: 'false' });
    const app = await createHttpApp({ config, database: { url: db.url, mode: 'external', stop: async () => undefined }, pino: createPino('info', sink) });
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const { port } = app.getHttpServer().address() as { port: number };
      await fetch(`http://127.0.0.1:${port}/v2/customers?access_token=eyJsecret.part.here&applicationUsername=alice%40example.com`);
      await fetch(`http://127.0.0.1:${port}/health/live`);
      await fetch(`http://127.0.0.1:${port}/metrics`);
      const log = lines.join('');
      // probes and scrapes are not logged at info
      expect(log).not.toMatch(/"url":"\/health\/live"/);
      expect(log).not.toMatch(/"url":"\/metrics"/);
      expect(log).toContain('access_token=[redacted]');
      expect(log).not.toContain('eyJsecret');
      expect(log).not.toContain('alice');
    } finally {
      await app.close();
      await db.drop();
    }
  });
});
