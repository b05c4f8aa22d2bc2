import { jest } from '@jest/globals';
import { appendToEventLog } from '../../src/event-log/event-log.js';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { txEvent } from '../utils/events.js';
import { runCli } from '../utils/processes.js';

jest.setTimeout(120_000);

// Defining entitlements (issue 42, docs/entitlements.md) over HTTP against real PostgreSQL, then the
// same through the built CLI: the scopes, the tenancy, every refusal naming its field and value,
// replace and remove, and the table a rebuild keeps.

describe('entitlement definitions (e2e: HTTP and CLI, real PostgreSQL)', () => {
  let db: TestDatabase;
  let api: TestApp;
  let writer: string;
  let reader: string;

  const send = async (method: string, path: string, token: string | undefined, body?: unknown, contentType = 'application/json') => {
    const response = await fetch(api.baseUrl + path, {
      method,
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { 'content-type': contentType }) },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text === '' ? undefined : JSON.parse(text), contentType: response.headers.get('content-type') };
  };
  const put = (name: string, body: unknown, token = writer) => send('PUT', `/v2/entitlements/${name}`, token, body);

  beforeAll(async () => {
    db = await createTestDatabase('entitlement_definitions');
    api = await startTestApp({ databaseUrl: db.url });
    writer = api.token('ent-app', ['entitlements:write']);
    reader = api.token('ent-app', ['customers:read']);
  });
  afterAll(async () => {
    await api?.close();
    await db?.drop();
  });

  it('given no definitions, when listed, then none', async () => {
    expect(await api.get('/v2/entitlements', reader)).toMatchObject({ status: 200, body: { entitlements: [] } });
  });

  it('given a PUT with entitlements:write, then the entitlement is defined, listed by identifier with its products in byte order', async () => {
    expect(await put('pro', { productIds: ['google:pro_monthly', 'apple:pro_monthly', 'apple:pro_yearly'] })).toEqual({
      status: 200,
      contentType: expect.stringMatching(/^application\/json/),
      body: { identifier: 'pro', productIds: ['apple:pro_monthly', 'apple:pro_yearly', 'google:pro_monthly'] },
    });
    // a product may grant several entitlements
    expect((await put('max', { productIds: ['apple:max_monthly', 'apple:pro_yearly'] })).status).toBe(200);
    expect((await api.get('/v2/entitlements', reader)).body).toEqual({
      entitlements: [
        { identifier: 'max', productIds: ['apple:max_monthly', 'apple:pro_yearly'] },
        { identifier: 'pro', productIds: ['apple:pro_monthly', 'apple:pro_yearly', 'google:pro_monthly'] },
      ],
    });
  });

  it('given a PUT of a defined name, then its products are replaced, not added to', async () => {
    expect((await put('pro', { productIds: ['apple:pro_yearly', 'stripe:price_pro'] })).status).toBe(200);
    expect((await api.get('/v2/entitlements', reader)).body.entitlements).toContainEqual({
      identifier: 'pro',
      productIds: ['apple:pro_yearly', 'stripe:price_pro'],
    });
    expect(await db.dataSource.query(`SELECT product_id FROM public.entitlement_products WHERE app_id = 'ent-app' AND entitlement = 'pro' ORDER BY 1`)).toEqual(
      [{ product_id: 'apple:pro_yearly' }, { product_id: 'stripe:price_pro' }],
    );
  });

  it('tenancy: another application neither sees nor changes these definitions', async () => {
    const other = api.token('other-app', ['customers:read', 'entitlements:write']);
    expect((await api.get('/v2/entitlements', other)).body).toEqual({ entitlements: [] });
    expect((await send('DELETE', '/v2/entitlements/pro', other)).status).toBe(404);
    expect((await api.get('/v2/entitlements', reader)).body.entitlements).toHaveLength(2);
  });

  it('scopes: reading needs customers:read; writing needs entitlements:write, which the default read token lacks', async () => {
    expect(await send('GET', '/v2/entitlements', undefined)).toMatchObject({ status: 401, body: { code: 'token_missing' } });
    expect(await send('GET', '/v2/entitlements', api.token('ent-app', ['transactions:read']))).toMatchObject({
      status: 403,
      body: { code: 'insufficient_scope' },
    });
    expect(await put('pro', { productIds: ['apple:x'] }, api.token('ent-app'))).toMatchObject({ status: 403, body: { code: 'insufficient_scope' } });
    expect(await send('DELETE', '/v2/entitlements/pro', api.token('ent-app', ['customers:read', 'customers:erase']))).toMatchObject({
      status: 403,
      body: { code: 'insufficient_scope' },
    });
    expect(await send('PUT', '/v2/entitlements/pro', undefined, { productIds: ['apple:x'] })).toMatchObject({ status: 401, body: { code: 'token_missing' } });
  });

  it.each([
    ['the name too long', `/${'p'.repeat(65)}`, { productIds: ['apple:pro'] }, 'name', `the entitlement name "${'p'.repeat(65)}" is longer than 64 characters`],
    [
      'a character outside the pattern',
      '/pro%20plus',
      { productIds: ['apple:pro'] },
      'name',
      'the entitlement name "pro plus" must start with a letter or digit and hold only letters, digits, "_", "." and "-"',
    ],
    ['an empty list', '/pro', { productIds: [] }, 'productIds', 'productIds must list at least one product id'],
    ['no list', '/pro', {}, 'productIds', 'productIds must be a list of product ids'],
    [
      'a product id without its platform',
      '/pro',
      { productIds: ['apple:pro_monthly', 'pro_monthly'] },
      'productIds',
      'productIds[1] "pro_monthly" is not a product id: <platform>:<product id> as transactions show it (apple:pro_monthly, google:pro_monthly, stripe:price_123), 3-512 characters',
    ],
    ['a duplicate', '/pro', { productIds: ['apple:a', 'apple:b', 'apple:a'] }, 'productIds', 'productIds[2] "apple:a" is listed twice'],
    [
      'too many products',
      '/pro',
      { productIds: Array.from({ length: 101 }, (_, i) => `apple:p${i}`) },
      'productIds',
      'productIds lists 101 product ids; an entitlement takes at most 100',
    ],
    ['an unknown field', '/pro', { productIds: ['apple:a'], products: [] }, 'products', 'unknown field "products"; known: productIds'],
    [
      'an unknown field of 5,000 characters (named by its first 100)',
      '/pro',
      { productIds: ['apple:a'], ['k'.repeat(5000)]: 1 },
      'k'.repeat(100),
      `unknown field "${'k'.repeat(100)}"; known: productIds`,
    ],
    ['a body that is not an object', '/pro', ['apple:a'], 'body', 'the body must be a JSON object such as {"productIds": ["apple:pro_monthly"]}'],
  ])('refuses %s: 400 invalid_parameter naming the field and the value, nothing changed', async (_case, path, body, parameter, detail) => {
    const before = (await api.get('/v2/entitlements', reader)).body;
    const answer = await send('PUT', `/v2/entitlements${path}`, writer, body);
    expect(answer).toMatchObject({
      status: 400,
      contentType: expect.stringMatching(/^application\/problem\+json/),
      body: { code: 'invalid_parameter', parameter, detail },
    });
    expect((await api.get('/v2/entitlements', reader)).body).toEqual(before);
  });

  it('given a DELETE, then the entitlement is gone (204); a name not defined is 404', async () => {
    expect(await send('DELETE', '/v2/entitlements/max', writer)).toMatchObject({ status: 204, body: undefined });
    expect((await api.get('/v2/entitlements', reader)).body.entitlements.map((e: { identifier: string }) => e.identifier)).toEqual(['pro']);
    expect(await send('DELETE', '/v2/entitlements/max', writer)).toMatchObject({ status: 404, body: { code: 'not_found' } });
    expect(await send('DELETE', '/v2/entitlements/-x', writer)).toMatchObject({ status: 400, body: { parameter: 'name' } });
  });

  it('at most 100 entitlements per application: the 101st is refused naming it, a redefinition still passes', async () => {
    const crowded = api.token('crowded-app', ['entitlements:write']);
    for (let i = 0; i < 100; i++) expect((await put(`e${i}`, { productIds: [`apple:p${i}`] }, crowded)).status).toBe(200);
    expect(await put('e100', { productIds: ['apple:p100'] }, crowded)).toMatchObject({
      status: 400,
      body: { code: 'invalid_parameter', parameter: 'name', detail: 'the application defines 100 entitlements already, the most it may; remove one first' },
    });
    expect((await put('e7', { productIds: ['apple:p7', 'apple:p7b'] }, crowded)).status).toBe(200);
  });

  it('concurrent PUTs of one name end with one of the lists, never a mix', async () => {
    const racer = api.token('race-app', ['entitlements:write', 'customers:read']);
    const lists = Array.from({ length: 8 }, (_, i) => [`apple:a${i}`, `apple:b${i}`, `google:c${i}`]);
    const answers = await Promise.all(lists.map((productIds) => put('pro', { productIds }, racer)));
    expect(answers.map((a) => a.status)).toEqual(lists.map(() => 200));
    const [defined] = (await api.get('/v2/entitlements', racer)).body.entitlements;
    expect(lists).toContainEqual(defined.productIds);
  });

  it('the OpenAPI document lists the operations with their scopes and the Entitlement schema', async () => {
    const doc = (await api.get('/openapi.json')).body;
    expect(Object.keys(doc.paths['/v2/entitlements/{name}']).sort()).toEqual(['delete', 'put']);
    expect(doc.paths['/v2/entitlements'].get.operationId).toBe('listEntitlements');
    expect(JSON.stringify(doc.paths['/v2/entitlements/{name}'].put.security)).toContain('entitlements:write');
    expect(doc.components.schemas.Entitlement.required).toEqual(['identifier', 'productIds']);
  });

  describe('the CLI (built), on the same database', () => {
    const env = () => ({ DATABASE_URL: db.url, LOG_LEVEL: 'error' });

    it('entitlements set, list and remove; the API sees what the CLI defined', async () => {
      const set = await runCli(['entitlements', 'set', '--app', 'cli-app', '--name', 'pro', '--products', 'apple:pro_monthly,google:pro_monthly'], env());
      expect(set).toEqual({ code: 0, stdout: 'entitlement pro of cli-app defined: apple:pro_monthly, google:pro_monthly\n', stderr: '' });
      const again = await runCli(['entitlements', 'set', '--app', 'cli-app', '--name', 'pro', '--products', 'apple:pro_yearly'], env());
      expect(again).toMatchObject({ code: 0, stdout: 'entitlement pro of cli-app replaced: apple:pro_yearly\n' });
      expect(await runCli(['entitlements', 'set', '--app', 'cli-app', '--name', 'lifetime', '--products', 'apple:unlock'], env())).toMatchObject({ code: 0 });
      expect(await runCli(['entitlements', 'list', '--app', 'cli-app'], env())).toEqual({
        code: 0,
        stdout: 'lifetime\tapple:unlock\npro\tapple:pro_yearly\n',
        stderr: '',
      });
      expect((await api.get('/v2/entitlements', api.token('cli-app'))).body.entitlements).toEqual([
        { identifier: 'lifetime', productIds: ['apple:unlock'] },
        { identifier: 'pro', productIds: ['apple:pro_yearly'] },
      ]);
      expect(await runCli(['entitlements', 'remove', '--app', 'cli-app', '--name', 'lifetime'], env())).toEqual({
        code: 0,
        stdout: 'entitlement lifetime of cli-app removed\n',
        stderr: '',
      });
      expect(await runCli(['entitlements', 'remove', '--app', 'cli-app', '--name', 'lifetime'], env())).toMatchObject({
        code: 1,
        stderr: 'error: the application cli-app defines no entitlement "lifetime"\n',
      });
      expect(await runCli(['entitlements', 'list', '--app', 'nobody'], env())).toMatchObject({ code: 0, stdout: 'no entitlements defined for nobody\n' });
    });

    it('a rebuild keeps the definitions (not a read-model table) and, replaying the log, reaches the same entitlements', async () => {
      const topic = 'ent-rebuild';
      expect(await runCli(['entitlements', 'set', '--app', 'cli-app', '--name', 'pro', '--products', 'apple:pro_yearly'], env())).toMatchObject({ code: 0 });
      const zoe = txEvent({
        app: 'cli-app',
        time: '2026-01-10T00:00:00.000Z',
        data: {
          transactionId: 'apple:zoe-1',
          applicationUsername: 'zoe',
          productId: 'apple:pro_yearly',
          purchaseDate: '2026-01-10T00:00:00.000Z',
          expirationDate: '2099-01-10T00:00:00.000Z',
        },
      });
      await appendToEventLog(db.dataSource, topic, [{ key: 'apple:r-apple:zoe-1', value: Buffer.from(JSON.stringify(zoe)) }]);
      const zoeEntitlements = async () =>
        (await api.get('/v2/customers?applicationUsername=zoe', api.token('cli-app'))).body.rows.map(
          (r: { customerInfo: { entitlements?: unknown } }) => r.customerInfo.entitlements,
        );
      const expected = [
        [{ identifier: 'pro', isActive: true, productId: 'apple:pro_yearly', transactionId: 'apple:zoe-1', expirationDate: '2099-01-10T00:00:00.000Z' }],
      ];
      for (const generation of [2, 3]) {
        const rebuilt = await runCli(['rebuild'], { ...env(), KAFKA_TOPIC: topic });
        expect({ code: rebuilt.code, out: rebuilt.stdout + rebuilt.stderr }).toMatchObject({
          code: 0,
          out: expect.stringContaining(`switched to generation ${generation}`),
        });
        expect((await api.get('/v2/entitlements', api.token('cli-app'))).body.entitlements).toEqual([{ identifier: 'pro', productIds: ['apple:pro_yearly'] }]);
        expect(await zoeEntitlements()).toMatchObject(expected);
      }
    });

    it.each([
      [
        ['--name', 'pro plus', '--products', 'apple:a'],
        'the entitlement name "pro plus" must start with a letter or digit and hold only letters, digits, "_", "." and "-"',
      ],
      [
        ['--name', 'pro', '--products', 'apple:a,pro_monthly'],
        'productIds[1] "pro_monthly" is not a product id: <platform>:<product id> as transactions show it (apple:pro_monthly, google:pro_monthly, stripe:price_123), 3-512 characters',
      ],
      [['--name', 'pro', '--products', 'apple:a,apple:a'], 'productIds[1] "apple:a" is listed twice'],
      [['--name', 'pro', '--products', ''], 'productIds must list at least one product id'],
      [['--name', 'pro'], 'entitlements set needs --products <platform:product,...>'],
    ])('entitlements set %j exits 2 with the message the API gives', async (args, message) => {
      expect(await runCli(['entitlements', 'set', '--app', 'cli-app', ...args], env())).toEqual({ code: 2, stdout: '', stderr: `error: ${message}\n` });
    });
  });
});
