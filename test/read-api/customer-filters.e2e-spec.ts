import type { Clock } from '../../src/common/clock.js';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { linkEvent, project, txEvent } from '../utils/events.js';

// GET /v2/customers?status=&renewalIntent=&productId=&expiresBefore=&expiresAfter= (issue 24), over
// HTTP against real PostgreSQL, at instants the test sets. Given the histories below, when asked at
// an instant, then the customers the documented rules name (written out here, not computed).

class TestClock implements Clock {
  at = new Date('2026-10-15T12:00:00.000Z');
  now(): Date {
    return this.at;
  }
}

const NOW = '2026-10-15T12:00:00.000Z';
const T = (day: string) => `${day}T00:00:00.000Z`;
const app = 'filters';

const history = [
  // ann: a monthly until 11-01, renewing -> active
  txEvent({
    app,
    time: T('2026-01-01'),
    data: {
      transactionId: 'apple:ann-1',
      receiptId: 'apple:r-ann',
      applicationUsername: 'ann',
      productId: 'apple:pro_monthly',
      purchaseDate: T('2026-10-01'),
      expirationDate: T('2026-11-01'),
      renewalIntent: 'Renew',
    },
  }),
  // ben: expired 10-10, in billing retry with a grace period until 10-26 -> grace_period
  txEvent({
    app,
    time: T('2026-01-02'),
    data: {
      transactionId: 'apple:ben-1',
      receiptId: 'apple:r-ben',
      applicationUsername: 'ben',
      productId: 'apple:pro_monthly',
      purchaseDate: T('2026-09-10'),
      expirationDate: T('2026-10-10'),
      renewalIntent: 'Renew',
      isBillingRetryPeriod: true,
      gracePeriodExpirationDate: T('2026-10-26'),
    },
  }),
  // cat: expired 10-10, in billing retry without a grace period -> billing_retry
  txEvent({
    app,
    time: T('2026-01-03'),
    data: {
      transactionId: 'google:GPA.3333-0000..0',
      receiptId: 'google:tok-cat',
      applicationUsername: 'cat',
      productId: 'google:basic',
      purchaseDate: T('2026-09-10'),
      expirationDate: T('2026-10-10'),
      renewalIntent: 'Renew',
      isBillingRetryPeriod: true,
    },
  }),
  // dan: lapsed 10-01 -> expired
  txEvent({
    app,
    time: T('2026-01-04'),
    data: {
      transactionId: 'apple:dan-1',
      receiptId: 'apple:r-dan',
      applicationUsername: 'dan',
      productId: 'apple:basic',
      purchaseDate: T('2026-09-01'),
      expirationDate: T('2026-10-01'),
      renewalIntent: 'Lapse',
    },
  }),
  // eve: a yearly refunded 10-05 (Apple keeps the expiresDate) -> expired
  txEvent({
    app,
    time: T('2026-01-05'),
    data: {
      transactionId: 'apple:eve-1',
      receiptId: 'apple:r-eve',
      applicationUsername: 'eve',
      productId: 'apple:pro_yearly',
      purchaseDate: T('2026-01-05'),
      expirationDate: T('2027-01-05'),
      renewalIntent: 'Lapse',
      revocationDate: T('2026-10-05'),
      isExpired: true,
      cancelationReason: 'Customer',
    },
  }),
  // fay: only a pending purchase -> none
  txEvent({
    app,
    time: T('2026-01-06'),
    data: {
      transactionId: 'google:GPA.6666-0000',
      receiptId: 'google:tok-fay',
      applicationUsername: 'fay',
      purchaseDate: T('2026-10-14'),
      expirationDate: T('2026-11-14'),
      isPending: true,
    },
  }),
  // gil: a receipt without transactions -> none
  linkEvent({ app, time: T('2026-01-07'), receiptId: 'apple:r-gil', user: 'gil' }),
  // hal: access ends at the very instant asked -> expired at NOW, active a millisecond before
  txEvent({
    app,
    time: T('2026-01-08'),
    data: {
      transactionId: 'apple:hal-1',
      receiptId: 'apple:r-hal',
      applicationUsername: 'hal',
      productId: 'apple:pro_monthly',
      purchaseDate: T('2026-09-15'),
      expirationDate: NOW,
    },
  }),
  // another tenant's paying customer is never counted
  txEvent({
    app: 'other',
    time: T('2026-01-01'),
    data: {
      transactionId: 'apple:zed-1',
      receiptId: 'apple:r-zed',
      applicationUsername: 'zed',
      purchaseDate: T('2026-10-01'),
      expirationDate: T('2026-11-01'),
    },
  }),
];

describe('GET /v2/customers filters (e2e, real PostgreSQL, clock set by the test)', () => {
  let db: TestDatabase;
  let api: TestApp;
  let token: string;
  const clock = new TestClock();

  beforeAll(async () => {
    db = await createTestDatabase('cust_filters');
    api = await startTestApp({ databaseUrl: db.url, clock });
    token = api.token(app, ['customers:read']);
    await project(db.dataSource, history);
  });

  afterAll(async () => {
    await api?.close();
    await db?.drop();
  });

  beforeEach(() => {
    clock.at = new Date(NOW);
  });

  const ask = async (query: string) => {
    const res = await api.get(`/v2/customers?${query}`, token);
    expect(res.status).toBe(200);
    return { names: res.body.rows.map((r: { applicationUsername: string }) => r.applicationUsername), paging: res.body.paging };
  };

  it('each status at 10-15 12:00: exactly the customers the rules name, with exact totals', async () => {
    expect(await ask('status=active')).toEqual({ names: ['ann'], paging: { skip: 0, limit: 100, total: 1 } });
    expect(await ask('status=grace_period')).toEqual({ names: ['ben'], paging: { skip: 0, limit: 100, total: 1 } });
    expect(await ask('status=billing_retry')).toEqual({ names: ['cat'], paging: { skip: 0, limit: 100, total: 1 } });
    expect(await ask('status=expired')).toEqual({ names: ['dan', 'eve', 'hal'], paging: { skip: 0, limit: 100, total: 3 } });
    expect(await ask('status=none')).toEqual({ names: ['fay', 'gil'], paging: { skip: 0, limit: 100, total: 2 } });
  });

  it('the statuses partition the customers: together, each customer once, totals adding up to the unfiltered total', async () => {
    const all = await ask('limit=1000');
    expect(await ask('status=active,grace_period,billing_retry,expired,none&limit=1000')).toEqual(all);
    let sum = 0;
    const seen: string[] = [];
    for (const s of ['active', 'grace_period', 'billing_retry', 'expired', 'none']) {
      const page = await ask(`status=${s}&limit=1000`);
      sum += page.paging.total;
      seen.push(...page.names);
    }
    expect(sum).toBe(all.paging.total);
    expect(seen.sort()).toEqual([...all.names].sort());
  });

  it('"how many are paying": status=active&limit=0 is the count alone; access now is active or grace_period', async () => {
    expect(await ask('status=active&limit=0')).toEqual({ names: [], paging: { skip: 0, limit: 0, total: 1 } });
    expect(await ask('status=active,grace_period&limit=0')).toEqual({ names: [], paging: { skip: 0, limit: 0, total: 2 } });
  });

  it('given hal ends at 12:00, when asked a millisecond before, then active; at 12:00, expired (no event needed)', async () => {
    clock.at = new Date(Date.parse(NOW) - 1);
    expect((await ask('status=active')).names).toEqual(['ann', 'hal']);
    clock.at = new Date(NOW);
    expect((await ask('status=active')).names).toEqual(['ann']);
    expect((await ask('status=expired')).names).toContain('hal');
  });

  it('given ben in grace until 10-26, when the grace ends, then billing_retry; before his expiration, active', async () => {
    clock.at = new Date(Date.parse(T('2026-10-26')) - 1);
    expect((await ask('status=grace_period')).names).toEqual(['ben']);
    clock.at = new Date(T('2026-10-26'));
    expect((await ask('status=grace_period')).names).toEqual([]);
    expect((await ask('status=billing_retry')).names).toEqual(['ben', 'cat']);
    clock.at = new Date(Date.parse(T('2026-10-10')) - 1);
    // eve's refund (10-05) and dan's lapse (10-01) are past; ben and cat still have their own expiration ahead
    expect((await ask('status=active')).names).toEqual(['ann', 'ben', 'cat', 'hal']);
  });

  it('given eve refunded on 10-05, then expired from the refund though her yearly runs to 2027', async () => {
    clock.at = new Date(Date.parse(T('2026-10-05')) - 1);
    expect((await ask('status=active')).names).toContain('eve');
    clock.at = new Date(T('2026-10-05'));
    expect((await ask('status=active')).names).not.toContain('eve');
    expect((await ask('status=expired')).names).toContain('eve');
  });

  it('given kim has access through Family Sharing, then active like a purchase; when the purchaser stops sharing (Apple REVOKE), then expired from the revocation', async () => {
    // Apple: a family member's transaction carries inAppOwnershipType FAMILY_SHARED; REVOKE sends it
    // again with a revocationDate when the purchaser turns sharing off or leaves the family.
    const family = 'family';
    const familyToken = api.token(family, ['customers:read']);
    const shared = {
      transactionId: 'apple:kim-1',
      receiptId: 'apple:r-kim',
      purchaseId: 'apple:kim-1',
      applicationUsername: 'kim',
      productId: 'apple:pro_yearly',
      purchaseDate: T('2026-06-01'),
      expirationDate: T('2027-06-01'),
      renewalIntent: 'Renew',
      ownershipType: 'FAMILY_SHARED',
    };
    await project(db.dataSource, [txEvent({ app: family, time: T('2026-06-01'), data: shared })]);
    const status = async (s: string) =>
      (await api.get(`/v2/customers?status=${s}`, familyToken)).body.rows.map((r: { applicationUsername: string }) => r.applicationUsername);
    expect(await status('active')).toEqual(['kim']);
    await project(db.dataSource, [txEvent({ app: family, time: T('2026-10-10'), data: { ...shared, revocationDate: T('2026-10-10'), isExpired: true } })]);
    expect(await status('active')).toEqual([]);
    expect(await status('expired')).toEqual(['kim']);
    clock.at = new Date(Date.parse(T('2026-10-10')) - 1);
    expect(await status('active')).toEqual(['kim']);
  });

  it('renewalIntent, productId (the current subscription) and the expiry bounds, alone and combined', async () => {
    expect((await ask('renewalIntent=Lapse')).names).toEqual(['dan', 'eve']);
    expect((await ask('renewalIntent=Renew')).names).toEqual(['ann', 'ben', 'cat']);
    expect((await ask('productId=apple:pro_monthly')).names).toEqual(['ann', 'ben', 'hal']);
    expect(await ask('productId=apple:pro_monthly&status=active')).toEqual({ names: ['ann'], paging: { skip: 0, limit: 100, total: 1 } });
    expect((await ask('productId=google:basic&renewalIntent=Renew')).names).toEqual(['cat']);
    // [12:00, 11-01): ben's grace end 10-26 and hal's 12:00 are in; ann's 11-01 is not; eve's access ended 10-05
    expect((await ask(`expiresAfter=${NOW}&expiresBefore=2026-11-01`)).names).toEqual(['ben', 'hal']);
    expect((await ask('expiresBefore=2026-10-10T00:00:00.001Z')).names).toEqual(['cat', 'dan', 'eve']);
    expect((await ask('expiresAfter=2026-11-01')).names).toEqual(['ann']);
    expect((await ask('productId=nothing')).paging.total).toBe(0);
  });

  it('skip and limit page through the filtered rows with the exact total', async () => {
    expect(await ask('status=expired&skip=1&limit=1')).toEqual({ names: ['eve'], paging: { skip: 1, limit: 1, total: 3 } });
    expect(await ask('status=expired&skip=3&limit=1')).toEqual({ names: [], paging: { skip: 3, limit: 1, total: 3 } });
  });

  it('pages from the middle of the matches of statuses, intent and product', async () => {
    const pages = async () => [
      await ask('status=expired&skip=1&limit=1'),
      await ask('status=expired,none&skip=2&limit=2'),
      await ask('status=active,grace_period&skip=1'),
      await ask('renewalIntent=Lapse&status=expired&skip=1'),
      await ask('productId=apple:pro_monthly&status=expired,active&skip=1'),
    ];
    const expected = [
      { names: ['eve'], paging: { skip: 1, limit: 1, total: 3 } },
      // in first-seen order: dan, eve, fay, gil, hal
      { names: ['fay', 'gil'], paging: { skip: 2, limit: 2, total: 5 } },
      { names: ['ben'], paging: { skip: 1, limit: 100, total: 2 } },
      { names: ['eve'], paging: { skip: 1, limit: 100, total: 2 } },
      // ann (active) and hal (expired at 12:00); ben is in grace
      { names: ['hal'], paging: { skip: 1, limit: 100, total: 2 } },
    ];
    expect(await pages()).toEqual(expected);
  });

  it('pages of the expiry bounds alone, from the middle, across first-seen weeks, with a bound on an access end', async () => {
    // first seen in two UTC weeks: ann, ben, cat, dan (from Monday 2025-12-29), eve, fay, gil, hal (from 2026-01-05);
    // access ends: ann 11-01, ben 10-26 (grace), cat 10-10, dan 10-01, eve 10-05 00:00 (refund), hal 10-15 12:00; fay and gil none
    expect(await ask('expiresAfter=2026-10-05T00:00:00.000Z&skip=2&limit=2')).toEqual({ names: ['cat', 'eve'], paging: { skip: 2, limit: 2, total: 5 } });
    expect(await ask('expiresAfter=2026-10-05T00:00:00.001Z&skip=2&limit=2')).toEqual({ names: ['cat', 'hal'], paging: { skip: 2, limit: 2, total: 4 } });
    expect(await ask(`expiresBefore=${NOW}&skip=1`)).toEqual({ names: ['dan', 'eve'], paging: { skip: 1, limit: 100, total: 3 } });
    expect(await ask('expiresBefore=2026-10-15T12:00:00.001Z&skip=3')).toEqual({ names: ['hal'], paging: { skip: 3, limit: 100, total: 4 } });
    // both bounds on hal's day, then on no one's
    expect(await ask('expiresAfter=2026-10-15T11:59:59.999Z&expiresBefore=2026-10-15T12:00:00.001Z')).toEqual({
      names: ['hal'],
      paging: { skip: 0, limit: 100, total: 1 },
    });
    expect(await ask('expiresAfter=2026-10-15T11:59:59.999Z&expiresBefore=2026-10-15T12:00:00.001Z&skip=1')).toEqual({
      names: [],
      paging: { skip: 1, limit: 100, total: 1 },
    });
    expect(await ask('expiresAfter=2026-10-02&expiresBefore=2026-10-05')).toEqual({ names: [], paging: { skip: 0, limit: 100, total: 0 } });
    expect(await ask('expiresAfter=2026-10-01&skip=4&limit=1')).toEqual({ names: ['eve'], paging: { skip: 4, limit: 1, total: 6 } });
    expect(await ask('expiresAfter=2026-10-01&skip=9&limit=0')).toEqual({ names: [], paging: { skip: 9, limit: 0, total: 6 } });
  });

  it('an expiry bound with a status, intent or product: pages from the middle, with access ends and grace starts on the day of the instant asked', async () => {
    // at 10-15 12:00: ann active (ends 11-01), ben in grace (10-10 to 10-26), cat billing_retry (ended 10-10), dan expired
    // (10-01, Lapse), eve expired (10-05, Lapse), hal expired at 12:00 (its access end is the instant's day)
    expect(await ask('status=active,grace_period&expiresBefore=2026-11-01T00:00:00.001Z&skip=1')).toEqual({
      names: ['ben'],
      paging: { skip: 1, limit: 100, total: 2 },
    });
    expect(await ask('status=expired&expiresAfter=2026-10-05T00:00:00.000Z&skip=1')).toEqual({ names: ['hal'], paging: { skip: 1, limit: 100, total: 2 } });
    expect(await ask('status=grace_period&expiresAfter=2026-10-01')).toEqual({ names: ['ben'], paging: { skip: 0, limit: 100, total: 1 } });
    expect(await ask('renewalIntent=Lapse&expiresAfter=2026-10-02')).toEqual({ names: ['eve'], paging: { skip: 0, limit: 100, total: 1 } });
    expect(await ask('productId=apple:pro_monthly&expiresBefore=2026-10-27&skip=1')).toEqual({ names: ['hal'], paging: { skip: 1, limit: 100, total: 2 } });
    expect(await ask('status=billing_retry,expired&expiresBefore=2026-10-10T00:00:00.001Z&skip=2&limit=1')).toEqual({
      names: ['eve'],
      paging: { skip: 2, limit: 1, total: 3 },
    });
    expect(await ask('status=none&expiresAfter=2000-01-01')).toEqual({ names: [], paging: { skip: 0, limit: 100, total: 0 } });
    // at 10-10 12:00 ben's grace started and cat's access ended that day; hal is active until 10-15
    clock.at = new Date('2026-10-10T12:00:00.000Z');
    expect(await ask('status=grace_period&expiresAfter=2026-10-01')).toEqual({ names: ['ben'], paging: { skip: 0, limit: 100, total: 1 } });
    expect(await ask('status=active&expiresAfter=2026-10-01&skip=1')).toEqual({ names: ['hal'], paging: { skip: 1, limit: 100, total: 2 } });
    expect(await ask('status=billing_retry,grace_period&expiresBefore=2026-10-26T00:00:00.001Z&skip=1')).toEqual({
      names: ['cat'],
      paging: { skip: 1, limit: 100, total: 2 },
    });
    // a millisecond before ben's grace starts, he is active
    clock.at = new Date('2026-10-09T23:59:59.999Z');
    expect(await ask('status=active&expiresAfter=2026-10-01')).toEqual({ names: ['ann', 'ben', 'cat', 'hal'], paging: { skip: 0, limit: 100, total: 4 } });
  });

  it('with applicationUsername, the named customers that match the filters (skip and limit still disregarded)', async () => {
    expect(await ask('applicationUsername=ann,dan,nobody&status=active&skip=5')).toEqual({ names: ['ann'], paging: { skip: 0, limit: 3, total: 1 } });
    expect(await ask('applicationUsername=ann,dan&renewalIntent=Lapse')).toEqual({ names: ['dan'], paging: { skip: 0, limit: 2, total: 1 } });
  });

  it('refuses every invalid value with problem+json naming the parameter', async () => {
    const cases: [string, string][] = [
      ['status=paying', 'status'],
      ['status=', 'status'],
      ['status=,', 'status'],
      ['status=active&status=expired', 'status'],
      ['renewalIntent=renew', 'renewalIntent'],
      ['renewalIntent=', 'renewalIntent'],
      ['productId=', 'productId'],
      ['productId=a%00b', 'productId'],
      [`productId=${'x'.repeat(1001)}`, 'productId'],
      ['expiresBefore=2024-02-30', 'expiresBefore'],
      ['expiresAfter=yesterday', 'expiresAfter'],
      ['expiresAfter=2024-01-01&expiresAfter=2024-01-02', 'expiresAfter'],
      ['changedAfter=0&status=active', 'status'],
      ['changedAfter=0&productId=x', 'productId'],
      ['applicationUsername=ann&status=gone', 'status'],
    ];
    for (const [query, parameter] of cases) {
      const res = await api.get(`/v2/customers?${query}`, token);
      expect({ query, status: res.status, type: res.headers.get('content-type'), parameter: res.body.parameter, code: res.body.code }).toEqual({
        query,
        status: 400,
        type: expect.stringContaining('application/problem+json'),
        parameter,
        code: 'invalid_parameter',
      });
    }
  });
});
