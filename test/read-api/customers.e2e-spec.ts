import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { expectEventually } from '../utils/expect-eventually.js';
import { linkEvent, project, txEvent } from '../utils/events.js';
import { startTestApp, type TestApp } from '../utils/app.js';

const inDays = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();

describe('GET /v2/customers (e2e, real PostgreSQL)', () => {
  let db: TestDatabase;
  let api: TestApp;
  let token: string;

  beforeAll(async () => {
    db = await createTestDatabase('cust_e2e');
    api = await startTestApp({ databaseUrl: db.url });
    token = api.token('app-1', ['customers:read']);
    await project(db.dataSource, [
      // alice: a monthly subscription renewed once (second transaction holds the latest expiration)
      txEvent({
        time: '2024-01-01T00:00:00Z',
        data: {
          transactionId: 'apple:a1',
          receiptId: 'apple:ra',
          applicationUsername: 'alice',
          purchaseDate: '2024-01-01T00:00:00Z',
          expirationDate: '2024-02-01T00:00:00Z',
          renewalIntent: 'Renew',
        },
      }),
      txEvent({
        time: '2024-02-01T00:00:00Z',
        data: {
          transactionId: 'apple:a2',
          receiptId: 'apple:ra',
          purchaseDate: '2024-01-01T00:00:00Z',
          lastRenewalDate: '2024-02-01T00:00:00Z',
          expirationDate: inDays(30),
          renewalIntent: 'Lapse',
        },
      }),
      // bob: expiration in the future but refunded (isExpired) -> not active
      txEvent({
        time: '2024-01-02T00:00:00Z',
        data: {
          transactionId: 'google:b1',
          platform: 'google',
          receiptId: 'google:rb',
          applicationUsername: 'bob',
          purchaseDate: '2024-01-02T00:00:00Z',
          expirationDate: inDays(10),
          isExpired: true,
        },
      }),
      // "doe, john": linked but no transactions yet
      linkEvent({ time: '2024-01-03T00:00:00Z', receiptId: 'apple:rj', user: 'doe, john' }),
      // carol: her receipt later moves to dave -> carol stays, empty
      linkEvent({ time: '2024-01-04T00:00:00Z', receiptId: 'apple:rc', user: 'carol' }),
      txEvent({
        time: '2024-01-04T00:00:00Z',
        data: { transactionId: 'apple:c1', receiptId: 'apple:rc', purchaseDate: '2024-01-04T00:00:00Z', expirationDate: '2024-02-04T00:00:00Z' },
      }),
      linkEvent({ time: '2024-01-05T00:00:00Z', receiptId: 'apple:rc', user: 'dave' }),
      // another tenant with the same username
      linkEvent({ app: 'app-2', time: '2023-12-31T00:00:00Z', receiptId: 'apple:zz', user: 'alice' }),
    ]);
  });

  afterAll(async () => {
    await api?.close();
    await db?.drop();
  });

  const names = (body: { rows: { applicationUsername: string }[] }) => body.rows.map((r) => r.applicationUsername);

  it('lists customers by first seen, then username, with derived customerInfo and receipts', async () => {
    const res = await api.get('/v2/customers', token);
    expect(res.status).toBe(200);
    expect(names(res.body)).toEqual(['alice', 'bob', 'doe, john', 'carol', 'dave']);
    expect(res.body.paging).toEqual({ skip: 0, limit: 100, total: 5 });
    const [alice, bob, john, carol, dave] = res.body.rows;
    expect(alice).toEqual({
      applicationUsername: 'alice',
      receiptIds: ['apple:ra'],
      customerInfo: {
        // the renewal charged on 02-01 is the latest transaction date
        lastPurchaseDate: '2024-02-01T00:00:00.000Z',
        expirationDate: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
        lastRenewalDate: '2024-02-01T00:00:00.000Z',
        renewalIntent: 'Lapse',
        activeSubscriber: true,
      },
    });
    expect(bob.customerInfo).toMatchObject({ activeSubscriber: false });
    expect(john).toEqual({ applicationUsername: 'doe, john', customerInfo: {}, receiptIds: ['apple:rj'] });
    // carol's receipt moved: she stays, with nothing linked
    expect(carol).toEqual({ applicationUsername: 'carol', customerInfo: {}, receiptIds: [] });
    expect(dave).toEqual({
      applicationUsername: 'dave',
      receiptIds: ['apple:rc'],
      customerInfo: { lastPurchaseDate: '2024-01-04T00:00:00.000Z', expirationDate: '2024-02-04T00:00:00.000Z', activeSubscriber: false },
    });
  });

  it('evaluates activeSubscriber at request time: it turns false when the expiration passes, with no new event', async () => {
    await project(db.dataSource, [
      txEvent({
        time: '2024-06-01T00:00:00Z',
        data: {
          transactionId: 'apple:e1',
          receiptId: 'apple:re',
          applicationUsername: 'erin',
          purchaseDate: '2024-06-01T00:00:00Z',
          expirationDate: new Date(Date.now() + 1500).toISOString(),
        },
      }),
    ]);
    const before = await api.get('/v2/customers?applicationUsername=erin', token);
    expect(before.body.rows[0].customerInfo.activeSubscriber).toBe(true);
    await expectEventually(
      async () => {
        const after = await api.get('/v2/customers?applicationUsername=erin', token);
        expect(after.body.rows[0].customerInfo.activeSubscriber).toBe(false);
      },
      10_000,
      250,
    );
  });

  it('pages by skip/limit; concatenated pages give every customer exactly once', async () => {
    const all = names((await api.get('/v2/customers?limit=1000', token)).body);
    const seen: string[] = [];
    for (let skip = 0; skip < all.length; skip += 2) {
      const res = await api.get(`/v2/customers?skip=${skip}&limit=2`, token);
      expect(res.body.paging).toEqual({ skip, limit: 2, total: all.length });
      seen.push(...names(res.body));
    }
    expect(seen).toEqual(all);
  });

  it('splits applicationUsername on literal commas before decoding, so %2C stays inside a name', async () => {
    const res = await api.get('/v2/customers?applicationUsername=doe%2C%20john,alice,nobody', token);
    expect(names(res.body)).toEqual(['alice', 'doe, john']);
    expect(res.body.paging).toEqual({ skip: 0, limit: 3, total: 2 });
  });

  it('disregards skip and limit when usernames are given, even invalid ones', async () => {
    const res = await api.get('/v2/customers?applicationUsername=alice,bob&skip=1&limit=1', token);
    expect(names(res.body)).toEqual(['alice', 'bob']);
    const invalid = await api.get('/v2/customers?applicationUsername=alice&skip=-3&limit=abc', token);
    expect(invalid.status).toBe(200);
    expect(names(invalid.body)).toEqual(['alice']);
  });

  it('refuses more than 1000 names, an empty list, malformed encoding and unknown parameters', async () => {
    const many = Array.from({ length: 1001 }, (_, i) => `u${i}`).join(',');
    const tooMany = await api.get(`/v2/customers?applicationUsername=${many}`, token);
    expect(tooMany.status).toBe(400);
    expect(tooMany.body).toMatchObject({ code: 'invalid_parameter', parameter: 'applicationUsername' });
    expect((await api.get('/v2/customers?applicationUsername=', token)).body).toMatchObject({ status: 400, parameter: 'applicationUsername' });
    expect((await api.get('/v2/customers?applicationUsername=%E0%A4%A', token)).body).toMatchObject({ status: 400, parameter: 'applicationUsername' });
    expect((await api.get('/v2/customers?user=alice', token)).body).toMatchObject({ status: 400, parameter: 'user' });
    expect((await api.get('/v2/customers?limit=1001', token)).body).toMatchObject({ status: 400, parameter: 'limit' });
  });

  it('a name list of exactly 1000 is accepted', async () => {
    const names1000 = ['alice', ...Array.from({ length: 999 }, (_, i) => `u${i}`)].join(',');
    const res = await api.get(`/v2/customers?applicationUsername=${names1000}`, token);
    expect(res.status).toBe(200);
    expect(res.body.paging).toEqual({ skip: 0, limit: 1000, total: 1 });
  });

  it('keeps tenants apart', async () => {
    const res = await api.get('/v2/customers', api.token('app-2', ['customers:read']));
    expect(res.body).toEqual({
      rows: [{ applicationUsername: 'alice', customerInfo: {}, receiptIds: ['apple:zz'] }],
      paging: { skip: 0, limit: 100, total: 1 },
    });
  });

  it('requires a token (401) with the customers:read scope and an app claim (403)', async () => {
    expect((await api.get('/v2/customers')).body).toMatchObject({ status: 401, code: 'token_missing' });
    expect((await api.get('/v2/customers', api.token('app-1', ['transactions:read']))).body).toMatchObject({ status: 403, code: 'insufficient_scope' });
    expect((await api.get('/v2/customers', api.token('', ['customers:read']))).body).toMatchObject({ status: 403, code: 'app_claim_missing' });
  });

  it('checks the scope again on every route for a token it has already verified', async () => {
    const transactionsOnly = api.token('app-1', ['transactions:read']);
    expect((await api.get('/v2/transactions', transactionsOnly)).status).toBe(200);
    expect((await api.get('/v2/customers', transactionsOnly)).body).toMatchObject({ status: 403, code: 'insufficient_scope' });
    const noApp = api.token('', ['customers:read', 'transactions:read']);
    expect((await api.get('/v2/customers', noApp)).body).toMatchObject({ status: 403, code: 'app_claim_missing' });
    expect((await api.get('/v2/customers', noApp)).body).toMatchObject({ status: 403, code: 'app_claim_missing' });
  });
});
