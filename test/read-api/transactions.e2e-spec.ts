import jwt from 'jsonwebtoken';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { linkEvent, project, txEvent } from '../utils/events.js';
import { startTestApp, TEST_SECRET, type TestApp } from '../utils/app.js';
import { expectEventually } from '../utils/expect-eventually.js';

describe('GET /v2/transactions (e2e, real PostgreSQL)', () => {
  let db: TestDatabase;
  let api: TestApp;
  let token: string;

  beforeAll(async () => {
    db = await createTestDatabase('tx_e2e');
    api = await startTestApp({ databaseUrl: db.url });
    token = api.token('app-1', ['transactions:read']);
    await project(db.dataSource, [
      txEvent({
        time: '2024-01-10T00:00:00Z',
        data: {
          transactionId: 'apple:t3',
          purchaseDate: '2024-01-10T00:00:00Z',
          expirationDate: '2024-02-10T00:00:00Z',
          amountUSD: 9.99,
          amountMicros: 9990000,
          currency: 'USD',
          sandbox: false,
        },
      }),
      txEvent({
        id: 'evt-t1',
        time: '2024-01-05T00:00:00Z',
        data: { transactionId: 'apple:t1', purchaseDate: '2024-01-05T00:00:00.123Z', priceUSD: 4.99, priceMicros: 4990000, isTrialPeriod: true },
      }),
      txEvent({ time: '2024-01-05T00:00:00Z', data: { transactionId: 'apple:t2', purchaseDate: '2024-01-05T00:00:00.123Z' } }),
      txEvent({
        time: '2024-03-01T00:00:00Z',
        data: { transactionId: 'google:t4', platform: 'google', purchaseDate: '2024-03-01T00:00:00Z', renewalIntent: 'Renew' },
      }),
      txEvent({ app: 'app-2', time: '2024-01-01T00:00:00Z', data: { transactionId: 'apple:other-tenant', purchaseDate: '2024-01-01T00:00:00Z' } }),
      linkEvent({ time: '2024-01-10T00:00:00Z', receiptId: 'apple:r-apple:t3', user: 'alice' }),
    ]);
  });

  afterAll(async () => {
    await api?.close();
    await db?.drop();
  });

  const ids = (body: { rows: { transactionId: string }[] }) => body.rows.map((r) => r.transactionId);

  it('lists the tenant rows ordered by transaction date then transactionId, with defaults echoed', async () => {
    const res = await api.get('/v2/transactions', token);
    expect(res.status).toBe(200);
    expect(ids(res.body)).toEqual(['apple:t1', 'apple:t2', 'apple:t3', 'google:t4']);
    expect(res.body.paging).toEqual({ skip: 0, limit: 100, total: 4 });
  });

  it("never shows another application's rows", async () => {
    const res = await api.get('/v2/transactions', api.token('app-2', ['transactions:read']));
    expect(ids(res.body)).toEqual(['apple:other-tenant']);
    expect(res.body.paging.total).toBe(1);
  });

  it('emits ISO dates with milliseconds and Z, omits absent fields, and both amount spellings', async () => {
    const res = await api.get('/v2/transactions', token);
    const t1 = res.body.rows[0];
    expect(t1).toEqual({
      transactionId: 'apple:t1',
      purchaseId: 'apple:p-apple:t1',
      productId: 'apple:monthly',
      platform: 'apple',
      receiptId: 'apple:r-apple:t1',
      purchaseDate: '2024-01-05T00:00:00.123Z',
      isTrialPeriod: true,
      amountUSD: 4.99,
      priceUSD: 4.99,
      amountMicros: 4990000,
      priceMicros: 4990000,
      // docs/revenue.md: Apple's 30% taken off (an estimate)
      proceedsUSD: 3.49,
      proceedsMicros: 3493000,
      // docs/api.md, "Provenance": an upstream producer's event (source "test"), written here without a log, so no receivedAt
      provenance: { kind: 'producer', source: 'test', eventId: 'evt-t1' },
    });
    const t3 = res.body.rows[2];
    expect(t3).toMatchObject({ expirationDate: '2024-02-10T00:00:00.000Z', sandbox: false, amountUSD: 9.99, priceUSD: 9.99, currency: 'USD' });
    expect(res.body.rows[1]).not.toHaveProperty('amountUSD');
    expect(res.body.rows[1]).not.toHaveProperty('sandbox');
  });

  it('pages with skip and limit so that concatenated pages give every row exactly once', async () => {
    const seen: string[] = [];
    for (let skip = 0; skip < 5; skip += 2) {
      const res = await api.get(`/v2/transactions?skip=${skip}&limit=2`, token);
      expect(res.body.paging).toEqual({ skip, limit: 2, total: 4 });
      seen.push(...ids(res.body));
    }
    expect(seen).toEqual(['apple:t1', 'apple:t2', 'apple:t3', 'google:t4']);
    const past = await api.get('/v2/transactions?skip=10', token);
    expect(past.body).toEqual({ rows: [], paging: { skip: 10, limit: 100, total: 4 } });
  });

  it('accepts limit=0 (total only) and limit=1000, refuses 1001', async () => {
    expect((await api.get('/v2/transactions?limit=0', token)).body).toEqual({ rows: [], paging: { skip: 0, limit: 0, total: 4 } });
    expect((await api.get('/v2/transactions?limit=1000', token)).body.paging.limit).toBe(1000);
    const res = await api.get('/v2/transactions?limit=1001', token);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ status: 400, code: 'invalid_parameter', parameter: 'limit' });
  });

  it.each([
    ['skip=-1', 'skip'],
    ['skip=1.5', 'skip'],
    ['skip=abc', 'skip'],
    ['skip=', 'skip'],
    ['limit=-5', 'limit'],
    ['limit=2e2', 'limit'],
    ['skip=1&skip=2', 'skip'],
    ['startdate=yesterday', 'startdate'],
    ['startdate=2024-02-30T00:00:00Z', 'startdate'],
    ['enddate=2024-13-01T00:00:00Z', 'enddate'],
    ['startdate=2024-03-01T00:00:00Z&enddate=2024-01-01T00:00:00Z', 'enddate'],
    ['startDate=2024-01-01T00:00:00Z', 'startDate'],
  ])('answers 400 problem+json naming the parameter for %s', async (query, parameter) => {
    const res = await api.get(`/v2/transactions?${query}`, token);
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(res.body).toMatchObject({ type: expect.any(String), title: expect.any(String), status: 400, code: 'invalid_parameter', parameter });
    expect(res.body.detail).toContain(parameter);
  });

  it('filters by date: startdate inclusive, enddate exclusive, total counts the filtered rows', async () => {
    const res = await api.get('/v2/transactions?startdate=2024-01-05T00:00:00.123Z&enddate=2024-03-01T00:00:00.000Z', token);
    expect(ids(res.body)).toEqual(['apple:t1', 'apple:t2', 'apple:t3']);
    expect(res.body.paging.total).toBe(3);
    const exact = await api.get('/v2/transactions?startdate=2024-01-05T00:00:00.124Z', token);
    expect(ids(exact.body)).toEqual(['apple:t3', 'google:t4']);
  });

  it('reads date offsets: 02:00+02:00 is midnight UTC', async () => {
    const res = await api.get(`/v2/transactions?startdate=${encodeURIComponent('2024-03-01T02:00:00+02:00')}`, token);
    expect(ids(res.body)).toEqual(['google:t4']);
    const before = await api.get(`/v2/transactions?enddate=${encodeURIComponent('2024-03-01T02:00:00+02:00')}`, token);
    expect(ids(before.body)).toEqual(['apple:t1', 'apple:t2', 'apple:t3']);
  });

  it('keeps a transaction in place when later snapshots (renewals) of its purchase arrive', async () => {
    await project(db.dataSource, [
      txEvent({
        time: '2024-02-10T00:00:00Z',
        data: {
          transactionId: 'apple:t3',
          purchaseDate: '2024-01-10T00:00:00Z',
          lastRenewalDate: '2024-02-10T00:00:00Z',
          expirationDate: '2024-03-10T00:00:00Z',
        },
      }),
    ]);
    const res = await api.get('/v2/transactions', token);
    expect(ids(res.body)).toEqual(['apple:t1', 'apple:t2', 'apple:t3', 'google:t4']);
    expect(res.body.rows[2]).toMatchObject({ lastRenewalDate: '2024-02-10T00:00:00.000Z', expirationDate: '2024-03-10T00:00:00.000Z' });
  });

  describe('authentication', () => {
    it('401 token_missing without a bearer token', async () => {
      const res = await api.get('/v2/transactions');
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ status: 401, code: 'token_missing' });
    });
    it('401 token_invalid for a token signed with another secret', async () => {
      const forged = jwt.sign({ app: 'app-1', scope: 'transactions:read' }, 'another-secret-another-secret-another-secret', { expiresIn: 60 });
      expect((await api.get('/v2/transactions', forged)).body).toMatchObject({ status: 401, code: 'token_invalid' });
    });
    it('401 for an unsigned (alg none) token', async () => {
      const none = jwt.sign({ app: 'app-1', scope: 'transactions:read' }, '', { algorithm: 'none' });
      expect((await api.get('/v2/transactions', none)).status).toBe(401);
    });
    it('401 token_expired for an expired token', async () => {
      const expired = jwt.sign({ app: 'app-1', scope: 'transactions:read', exp: Math.floor(Date.now() / 1000) - 10 }, TEST_SECRET);
      expect((await api.get('/v2/transactions', expired)).body).toMatchObject({ status: 401, code: 'token_expired' });
    });
    it('401 for garbage, saying what is wrong with the token', async () => {
      expect((await api.get('/v2/transactions', 'not.a.jwt')).body).toMatchObject({
        status: 401,
        code: 'token_invalid',
        detail: 'The bearer token is not a JWT: its header is not base64url-encoded JSON.',
      });
      expect((await api.get('/v2/transactions', 'garbage')).body).toMatchObject({
        detail: 'The bearer token is not a JWT: expected three base64url parts, header.payload.signature.',
      });
      const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from('{"app":"app-1"}').toString('base64url')}.`;
      expect((await api.get('/v2/transactions', none)).body.detail).toBe(
        'The bearer token is signed with "none"; tokens must be signed with HS256 (JWT_SECRET) or RS256/ES256 (JWT_JWKS_URI).',
      );
      const wrongKey = jwt.sign({ app: 'app-1', scope: 'transactions:read' }, 'another-secret-that-is-long-enough-for-hs256', { expiresIn: 60 });
      expect((await api.get('/v2/transactions', wrongKey)).body).toMatchObject({
        code: 'token_invalid',
        detail: 'The bearer token was rejected: invalid signature.',
      });
    });
    it('403 insufficient_scope when the scope is missing', async () => {
      const res = await api.get('/v2/transactions', api.token('app-1', ['customers:read']));
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ code: 'insufficient_scope' });
    });
    // The guard remembers verified HS256 tokens (issue 25): a token seen before must get the same verdict.
    it('judges a token it has verified before the same way again: scopes and the app claim are checked every time', async () => {
      const noScope = api.token('app-1', ['customers:read']);
      const noApp = jwt.sign({ scope: 'transactions:read' }, TEST_SECRET, { expiresIn: 60 });
      for (let i = 0; i < 3; i++) {
        expect((await api.get('/v2/transactions', token)).status).toBe(200);
        expect((await api.get('/v2/transactions', noScope)).body).toMatchObject({ status: 403, code: 'insufficient_scope' });
        expect((await api.get('/v2/transactions', noApp)).body).toMatchObject({ status: 403, code: 'app_claim_missing' });
      }
    });
    it('refuses a token it accepted before, once that token has expired', async () => {
      const shortLived = jwt.sign({ app: 'app-1', scope: 'transactions:read', exp: Math.floor(Date.now() / 1000) + 2 }, TEST_SECRET);
      expect((await api.get('/v2/transactions', shortLived)).status).toBe(200);
      await expectEventually(
        async () => expect((await api.get('/v2/transactions', shortLived)).body).toMatchObject({ status: 401, code: 'token_expired' }),
        10_000,
        200,
      );
    });
    it('403 app_claim_missing when the token names no application', async () => {
      const noApp = jwt.sign({ scope: 'transactions:read' }, TEST_SECRET, { expiresIn: 60 });
      const res = await api.get('/v2/transactions', noApp);
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ code: 'app_claim_missing' });
    });
  });
});
