import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { startTestApp, type TestApp } from '../utils/app.js';

describe('HTTP surface: errors, OpenAPI, health (e2e)', () => {
  let db: TestDatabase;
  let api: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase('surface');
    api = await startTestApp({ databaseUrl: db.url });
  });

  afterAll(async () => {
    await api?.close();
    await db?.drop();
  });

  it('answers unknown routes with a 404 problem', async () => {
    const res = await api.get('/v3/nothing');
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(res.body).toMatchObject({ status: 404, code: 'not_found', title: 'Not found', type: expect.any(String), detail: expect.any(String) });
  });

  it('serves a generated OpenAPI 3 document describing both endpoints', async () => {
    const res = await api.get('/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    expect(Object.keys(res.body.paths)).toEqual(expect.arrayContaining(['/v2/customers', '/v2/transactions']));
    const params = res.body.paths['/v2/transactions'].get.parameters.map((p: { name: string }) => p.name);
    expect(params).toEqual(expect.arrayContaining(['skip', 'limit', 'startdate', 'enddate']));
    expect(res.body.paths['/v2/transactions'].get.responses['200'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/TransactionPage',
    });
    const row = res.body.components.schemas.Transaction;
    expect(row.properties).toMatchObject({
      gracePeriodExpirationDate: { type: 'string', format: 'date-time' },
      revocationDate: { type: 'string', format: 'date-time' },
      isUpgraded: { type: 'boolean' },
    });
  });

  it('declares the username list so clients and Swagger UI send literal commas', async () => {
    const { body } = await api.get('/openapi.json');
    const param = body.paths['/v2/customers'].get.parameters.find((p: { name: string }) => p.name === 'applicationUsername');
    expect(param).toMatchObject({ in: 'query', style: 'form', explode: false, schema: { type: 'array', items: { type: 'string' } } });
    for (const op of [body.paths['/v2/customers'].get, body.paths['/v2/transactions'].get]) {
      expect(Object.keys(op.responses).sort()).toEqual(['200', '400', '401', '403', '405', '431', '500', '503']);
      expect(op.responses['200'].description).not.toBe('');
    }
    expect(body.paths['/v2/customers'].get.security).toEqual([{ bearer: ['customers:read'] }]);
    expect(body.paths['/v2/transactions'].get.security).toEqual([{ bearer: ['transactions:read'] }]);
    expect(body.components.schemas.Problem.properties.code.enum).toContain('invalid_parameter');
  });

  it('documents the store-notification endpoints', async () => {
    const { body } = await api.get('/openapi.json');
    expect(body.paths['/v2/notifications/apple/{appId}'].post).toMatchObject({ operationId: 'receiveAppleNotification' });
    expect(body.paths['/v2/notifications/apple/{appId}'].post.requestBody.content['application/json'].schema.required).toEqual(['signedPayload']);
    expect(body.paths['/v2/notifications/google/{appId}'].post).toMatchObject({ operationId: 'receiveGoogleNotification' });
    expect(Object.keys(body.paths['/v2/notifications/google/{appId}'].post.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '503']));
  });

  it('documents the change feed: changedAfter, paging.next and the webhook messages', async () => {
    const { body } = await api.get('/openapi.json');
    for (const path of ['/v2/customers', '/v2/transactions']) {
      const get = body.paths[path].get;
      expect(get.parameters.find((p: { name: string }) => p.name === 'changedAfter')).toMatchObject({ in: 'query', schema: { type: 'string' } });
    }
    expect(body.components.schemas.Paging.properties.next).toMatchObject({ type: 'string' });
    const hooks = body.webhooks;
    expect(Object.keys(hooks).sort()).toEqual(['customer.deleted', 'customer.updated', 'transaction.deleted', 'transaction.updated']);
    const customer = hooks['customer.updated'].post.requestBody.content['application/json'].schema;
    expect(customer.properties.data).toEqual({ $ref: '#/components/schemas/CustomerSummary' });
    expect(body.components.schemas.CustomerSummary.properties).toHaveProperty('customerInfo');
    const transaction = hooks['transaction.updated'].post.requestBody.content['application/json'].schema;
    expect(transaction.properties.data).toEqual({ $ref: '#/components/schemas/Transaction' });
    expect(hooks['transaction.updated'].post.parameters.map((p: { name: string }) => p.name)).toEqual(['webhook-id', 'webhook-timestamp', 'webhook-signature']);
  });

  it('answers other methods on the endpoints with 405 and Allow', async () => {
    for (const method of ['POST', 'DELETE', 'PUT', 'PATCH']) {
      const res = await fetch(`${api.baseUrl}/v2/customers?limit=1`, { method, headers: { authorization: `Bearer ${api.token('app-1')}` } });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('GET, HEAD');
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(await res.json()).toMatchObject({ status: 405, code: 'method_not_allowed' });
    }
    expect((await fetch(`${api.baseUrl}/v2/nothing`, { method: 'POST' })).status).toBe(404);
  });

  it('says how to authenticate on 401 and 403 (RFC 6750)', async () => {
    const none = await fetch(`${api.baseUrl}/v2/transactions`);
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="subscription-records"');
    const bad = await fetch(`${api.baseUrl}/v2/transactions`, { headers: { authorization: 'Bearer garbage' } });
    expect(bad.status).toBe(401);
    expect(bad.headers.get('www-authenticate')).toMatch(/^Bearer realm="subscription-records", error="invalid_token", error_description="[^"]+"$/);
    const scope = await fetch(`${api.baseUrl}/v2/customers`, { headers: { authorization: `Bearer ${api.token('app-1', ['transactions:read'])}` } });
    expect(scope.status).toBe(403);
    expect(scope.headers.get('www-authenticate')).toContain('error="insufficient_scope"');
  });

  it('reports liveness and readiness', async () => {
    expect((await api.get('/health/live')).body).toEqual({ status: 'ok' });
    const ready = await api.get('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body.details.database.status).toBe('up');
  });

  it('echoes a request id only when short and printable', async () => {
    const res = await fetch(`${api.baseUrl}/health/live`, { headers: { 'x-request-id': 'abc-123' } });
    expect(res.headers.get('x-request-id')).toBe('abc-123');
    for (const id of ['x'.repeat(129), 'has space', 'tab\there']) {
      const other = await fetch(`${api.baseUrl}/health/live`, { headers: { 'x-request-id': id } });
      expect(other.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  it('answers 500 without leaking internals when the database fails, and readiness goes down', async () => {
    await db.dataSource.query('ALTER TABLE read_model.transaction_day_counts RENAME TO transactions_gone');
    try {
      const res = await api.get('/v2/transactions', api.token('app-1'));
      expect(res.status).toBe(500);
      expect(res.body).toEqual({
        type: expect.any(String),
        title: 'Internal server error',
        status: 500,
        code: 'internal_error',
        detail: 'The server could not complete the request.',
        instance: '/v2/transactions',
      });
      expect(JSON.stringify(res.body)).not.toMatch(/transactions_gone|relation|SELECT/i);
      await db.dataSource.query('DELETE FROM migrations');
      const ready = await api.get('/health/ready');
      expect(ready.status).toBe(503);
      expect(ready.body).toMatchObject({ status: 503, code: 'service_unavailable' });
    } finally {
      await db.dataSource.query('ALTER TABLE read_model.transactions_gone RENAME TO transaction_day_counts');
    }
  });
});
