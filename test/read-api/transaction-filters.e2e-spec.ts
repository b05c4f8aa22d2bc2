import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { project, txEvent } from '../utils/events.js';

// GET /v2/transactions?transactionId=&purchaseId=&productId=&platform=&sandbox= (issue 24), alone,
// combined and with the date range, over HTTP against real PostgreSQL. Expected rows written out.

const T = (day: string) => `${day}T00:00:00.000Z`;
const app = 'tx-filters';

const history = [
  // An Apple subscription: original 1000001, renewals 1000002 and 1000003 (purchaseId = the original)
  txEvent({
    app,
    time: T('2026-08-01'),
    data: {
      transactionId: 'apple:1000001',
      purchaseId: 'apple:1000001',
      receiptId: 'apple:1000001',
      productId: 'apple:pro_monthly',
      purchaseDate: T('2026-08-01'),
      expirationDate: T('2026-09-01'),
      sandbox: false,
    },
  }),
  txEvent({
    app,
    time: T('2026-09-01'),
    data: {
      transactionId: 'apple:1000002',
      purchaseId: 'apple:1000001',
      receiptId: 'apple:1000001',
      productId: 'apple:pro_monthly',
      purchaseDate: T('2026-08-01'),
      lastRenewalDate: T('2026-09-01'),
      expirationDate: T('2026-10-01'),
      sandbox: false,
    },
  }),
  txEvent({
    app,
    time: T('2026-10-01'),
    data: {
      transactionId: 'apple:1000003',
      purchaseId: 'apple:1000001',
      receiptId: 'apple:1000001',
      productId: 'apple:pro_yearly',
      purchaseDate: T('2026-08-01'),
      lastRenewalDate: T('2026-10-01'),
      expirationDate: T('2027-10-01'),
      sandbox: false,
    },
  }),
  // A Google subscription: order GPA.1111-2222-3333-44444 then its renewal ..0
  txEvent({
    app,
    time: T('2026-08-15'),
    data: {
      transactionId: 'google:GPA.1111-2222-3333-44444',
      purchaseId: 'google:GPA.1111-2222-3333-44444',
      receiptId: 'google:tok-1',
      productId: 'google:basic',
      purchaseDate: T('2026-08-15'),
      expirationDate: T('2026-09-15'),
      sandbox: true,
    },
  }),
  txEvent({
    app,
    time: T('2026-09-15'),
    data: {
      transactionId: 'google:GPA.1111-2222-3333-44444..0',
      purchaseId: 'google:GPA.1111-2222-3333-44444',
      receiptId: 'google:tok-1',
      productId: 'google:basic',
      purchaseDate: T('2026-08-15'),
      lastRenewalDate: T('2026-09-15'),
      expirationDate: T('2026-10-15'),
      sandbox: true,
    },
  }),
  // An unrelated Apple purchase without a sandbox flag
  txEvent({
    app,
    time: T('2026-09-20'),
    data: {
      transactionId: 'apple:2000001',
      purchaseId: 'apple:2000001',
      receiptId: 'apple:2000001',
      productId: 'apple:pro_monthly',
      purchaseDate: T('2026-09-20'),
      expirationDate: T('2026-10-20'),
    },
  }),
  // Another tenant's row of the same chain id is never seen
  txEvent({
    app: 'other',
    time: T('2026-08-01'),
    data: {
      transactionId: 'apple:1000001',
      purchaseId: 'apple:1000001',
      receiptId: 'apple:1000001',
      productId: 'apple:pro_monthly',
      purchaseDate: T('2026-08-01'),
      expirationDate: T('2026-09-01'),
    },
  }),
];

describe('GET /v2/transactions filters (e2e, real PostgreSQL)', () => {
  let db: TestDatabase;
  let api: TestApp;
  let token: string;

  beforeAll(async () => {
    db = await createTestDatabase('tx_filters');
    api = await startTestApp({ databaseUrl: db.url });
    token = api.token(app, ['transactions:read']);
    await project(db.dataSource, history);
  });

  afterAll(async () => {
    await api?.close();
    await db?.drop();
  });

  const ask = async (query: string) => {
    const res = await api.get(`/v2/transactions?${query}`, token);
    expect(res.status).toBe(200);
    return { ids: res.body.rows.map((r: { transactionId: string }) => r.transactionId), total: res.body.paging.total };
  };
  const appleChain = ['apple:1000001', 'apple:1000002', 'apple:1000003'];
  const googleChain = ['google:GPA.1111-2222-3333-44444', 'google:GPA.1111-2222-3333-44444..0'];

  it('any id of a chain finds its rows: Apple original or renewal, Google order or renewal order, as transactionId or purchaseId', async () => {
    for (const id of appleChain) {
      expect(await ask(`transactionId=${id}`)).toEqual({ ids: appleChain, total: 3 });
      expect(await ask(`purchaseId=${id}`)).toEqual({ ids: appleChain, total: 3 });
    }
    for (const id of googleChain) {
      expect(await ask(`transactionId=${encodeURIComponent(id)}`)).toEqual({ ids: googleChain, total: 2 });
      expect(await ask(`purchaseId=${encodeURIComponent(id)}`)).toEqual({ ids: googleChain, total: 2 });
    }
    expect(await ask('transactionId=apple:999')).toEqual({ ids: [], total: 0 });
  });

  it("an id without its store prefix, as the stores' consoles show it, finds the same rows", async () => {
    expect(await ask('transactionId=1000003')).toEqual({ ids: appleChain, total: 3 });
    expect(await ask('purchaseId=1000001')).toEqual({ ids: appleChain, total: 3 });
    expect(await ask(`transactionId=${encodeURIComponent('GPA.1111-2222-3333-44444..0')}`)).toEqual({ ids: googleChain, total: 2 });
    expect(await ask('purchaseId=GPA.1111-2222-3333-44444')).toEqual({ ids: googleChain, total: 2 });
    expect(await ask('transactionId=999')).toEqual({ ids: [], total: 0 });
  });

  it('productId, platform and sandbox, alone and combined, with exact totals', async () => {
    expect(await ask('productId=apple:pro_monthly')).toEqual({ ids: ['apple:1000001', 'apple:1000002', 'apple:2000001'], total: 3 });
    expect(await ask('platform=google')).toEqual({ ids: googleChain, total: 2 });
    expect(await ask('sandbox=true')).toEqual({ ids: googleChain, total: 2 });
    expect(await ask('sandbox=false')).toEqual({ ids: ['apple:1000001', 'apple:1000002', 'apple:2000001', 'apple:1000003'], total: 4 });
    expect(await ask('platform=apple&productId=apple:pro_monthly&transactionId=apple:1000003')).toEqual({ ids: ['apple:1000001', 'apple:1000002'], total: 2 });
    expect(await ask('platform=apple&sandbox=true')).toEqual({ ids: [], total: 0 });
  });

  it('combine with the date range (startdate inclusive, enddate exclusive) and skip/limit', async () => {
    expect(await ask('productId=apple:pro_monthly&startdate=2026-09-01&enddate=2026-09-20')).toEqual({ ids: ['apple:1000002'], total: 1 });
    expect(await ask('transactionId=apple:1000001&startdate=2026-09-01')).toEqual({ ids: ['apple:1000002', 'apple:1000003'], total: 2 });
    expect(await ask('purchaseId=apple:1000001&skip=1&limit=1')).toEqual({ ids: ['apple:1000002'], total: 3 });
    expect(await ask('purchaseId=apple:1000001&limit=0')).toEqual({ ids: [], total: 3 });
    expect(await ask('purchaseId=apple:1000001&skip=3')).toEqual({ ids: [], total: 3 });
  });

  it('a range cut inside a day counts only the matching rows it cuts off, and pages from there', async () => {
    // one day of traffic: which rows match changes through the day
    const day = 'tx-filters-day';
    const at = (hour: string) => `2026-11-02T${hour}:00:00.000Z`;
    const rows: [string, string, string][] = [
      ['01', 'google:GPA.5555-0000-0000-00001', 'google:basic'],
      ['05', 'apple:3000001', 'apple:pro_monthly'],
      ['09', 'apple:3000002', 'apple:pro_yearly'],
      ['13', 'apple:3000003', 'apple:pro_monthly'],
      ['17', 'google:GPA.5555-0000-0000-00002', 'google:basic'],
      ['21', 'apple:3000004', 'apple:pro_monthly'],
    ];
    await project(
      db.dataSource,
      rows.map(([hour, transactionId, productId]) =>
        txEvent({ app: day, time: at(hour), data: { transactionId, productId, purchaseDate: at(hour), expirationDate: '2026-12-02T00:00:00.000Z' } }),
      ),
    );
    const dayToken = api.token(day, ['transactions:read']);
    const askDay = async (query: string) => {
      const res = await api.get(`/v2/transactions?${query}`, dayToken);
      expect(res.status).toBe(200);
      return { ids: res.body.rows.map((r: { transactionId: string }) => r.transactionId), total: res.body.paging.total };
    };
    const range = `startdate=${at('04')}&enddate=${at('20')}`;
    expect(await askDay(`productId=apple:pro_monthly&${range}`)).toEqual({ ids: ['apple:3000001', 'apple:3000003'], total: 2 });
    expect(await askDay(`productId=apple:pro_monthly&${range}&skip=1`)).toEqual({ ids: ['apple:3000003'], total: 2 });
    expect(await askDay(`platform=google&${range}`)).toEqual({ ids: ['google:GPA.5555-0000-0000-00002'], total: 1 });
    expect(await askDay(`platform=apple&startdate=${at('06')}&skip=1&limit=1`)).toEqual({ ids: ['apple:3000003'], total: 3 });
    expect(await askDay(`sandbox=false&enddate=${at('14')}&skip=2`)).toEqual({ ids: ['apple:3000002', 'apple:3000003'], total: 4 });
  });

  it('refuses every invalid value with problem+json naming the parameter', async () => {
    const cases: [string, string][] = [
      ['transactionId=', 'transactionId'],
      ['purchaseId=a%00b', 'purchaseId'],
      [`productId=${'x'.repeat(1001)}`, 'productId'],
      ['platform=', 'platform'],
      ['platform=apple&platform=google', 'platform'],
      ['sandbox=yes', 'sandbox'],
      ['sandbox=', 'sandbox'],
      ['changedAfter=0&transactionId=apple:1', 'transactionId'],
      ['changedAfter=0&sandbox=true', 'sandbox'],
      ['productId=x&enddate=2024-02-30', 'enddate'],
    ];
    for (const [query, parameter] of cases) {
      const res = await api.get(`/v2/transactions?${query}`, token);
      expect({ query, status: res.status, type: res.headers.get('content-type'), parameter: res.body.parameter }).toEqual({
        query,
        status: 400,
        type: expect.stringContaining('application/problem+json'),
        parameter,
      });
    }
  });
});
