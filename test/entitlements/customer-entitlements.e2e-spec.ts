import { jest } from '@jest/globals';
import type { Clock } from '../../src/common/clock.js';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { project, txEvent } from '../utils/events.js';
import { drainFeed, type Row } from '../utils/change-feed.js';
import { queueChanges } from '../../src/webhooks/queue-changes.js';
import { addEndpoint } from '../../src/webhooks/webhook-endpoints.js';

jest.setTimeout(120_000);

// customerInfo.entitlements on GET /v2/customers (issue 42, docs/entitlements.md "What grants an
// entitlement"), over HTTP against real PostgreSQL. Given the histories below and the definitions
// PUT through the API, when customers are read at an instant the test sets, then the entries the
// documented rules give, written out here (not computed).

class TestClock implements Clock {
  at = new Date('2026-10-15T12:00:00.000Z');
  now(): Date {
    return this.at;
  }
}

const app = 'ent-read';
const T = (day: string) => `${day}T00:00:00.000Z`;
const tx = (time: string, data: Record<string, unknown> & { transactionId: string }) =>
  txEvent({ app, time: T(time), data: { renewalIntent: 'Renew', ...data } });

const history = [
  // uma: an upgrade within the subscription: the pro yearly, then the max monthly charged while the yearly was paid for
  tx('2026-01-10', {
    transactionId: 'apple:uma-y',
    receiptId: 'apple:r-uma',
    purchaseId: 'apple:p-uma',
    applicationUsername: 'uma',
    productId: 'apple:pro_yearly',
    purchaseDate: T('2026-01-10'),
    expirationDate: T('2027-01-10'),
  }),
  tx('2026-10-01', {
    transactionId: 'apple:uma-m',
    receiptId: 'apple:r-uma',
    purchaseId: 'apple:p-uma',
    productId: 'apple:max_monthly',
    purchaseDate: T('2026-01-10'),
    lastRenewalDate: T('2026-10-01'),
    expirationDate: T('2026-11-01'),
  }),
  // rita: two subscriptions granting pro, the yearly refunded; the monthly keeps pro
  tx('2026-01-10', {
    transactionId: 'apple:rita-y',
    receiptId: 'apple:r-rita-y',
    applicationUsername: 'rita',
    productId: 'apple:pro_yearly',
    purchaseDate: T('2026-01-10'),
    expirationDate: T('2027-01-10'),
  }),
  tx('2026-03-01', {
    transactionId: 'apple:rita-y',
    receiptId: 'apple:r-rita-y',
    productId: 'apple:pro_yearly',
    purchaseDate: T('2026-01-10'),
    expirationDate: T('2027-01-10'),
    revocationDate: T('2026-03-01'),
    isExpired: true,
    renewalIntent: 'Lapse',
  }),
  tx('2026-10-01', {
    transactionId: 'google:GPA.rita-1',
    receiptId: 'google:tok-rita',
    applicationUsername: 'rita',
    productId: 'google:pro_monthly',
    purchaseDate: T('2026-10-01'),
    expirationDate: T('2026-11-01'),
  }),
  // dora: a product no entitlement lists, until a definition names it
  tx('2026-10-02', {
    transactionId: 'google:GPA.dora-1',
    receiptId: 'google:tok-dora',
    applicationUsername: 'dora',
    productId: 'google:basic_monthly',
    purchaseDate: T('2026-10-02'),
    expirationDate: T('2026-11-02'),
  }),
  // lily: a lifetime unlock (no expirationDate); rex: the same, refunded
  tx('2024-05-01', {
    transactionId: 'apple:lily-l',
    receiptId: 'apple:r-lily',
    applicationUsername: 'lily',
    productId: 'apple:lifetime',
    purchaseDate: T('2024-05-01'),
    renewalIntent: undefined,
  }),
  tx('2026-05-01', {
    transactionId: 'apple:rex-l',
    receiptId: 'apple:r-rex',
    applicationUsername: 'rex',
    productId: 'apple:lifetime',
    purchaseDate: T('2026-05-01'),
    revocationDate: T('2026-06-01'),
    renewalIntent: undefined,
  }),
  // cody: a consumable (the store says consumed), of a product an entitlement lists
  tx('2026-09-01', {
    transactionId: 'google:GPA.cody-1',
    receiptId: 'google:tok-cody',
    applicationUsername: 'cody',
    productId: 'google:coins',
    purchaseDate: T('2026-09-01'),
    isConsumed: true,
    renewalIntent: undefined,
  }),
  // bill: billing retry without grace; gina: billing retry within a grace period
  tx('2026-10-10', {
    transactionId: 'apple:bill-1',
    receiptId: 'apple:r-bill',
    applicationUsername: 'bill',
    productId: 'apple:pro_monthly',
    purchaseDate: T('2026-09-10'),
    expirationDate: T('2026-10-10'),
    isBillingRetryPeriod: true,
  }),
  tx('2026-10-10', {
    transactionId: 'apple:gina-1',
    receiptId: 'apple:r-gina',
    applicationUsername: 'gina',
    productId: 'apple:pro_monthly',
    purchaseDate: T('2026-09-10'),
    expirationDate: T('2026-10-10'),
    isBillingRetryPeriod: true,
    gracePeriodExpirationDate: T('2026-10-26'),
  }),
  // pete: only a pending purchase
  tx('2026-10-14', {
    transactionId: 'google:GPA.pete-1',
    receiptId: 'google:tok-pete',
    applicationUsername: 'pete',
    productId: 'google:pro_monthly',
    purchaseDate: T('2026-10-14'),
    expirationDate: T('2026-11-14'),
    isPending: true,
  }),
  // fran: a family member's own transaction of the pro monthly
  tx('2026-10-03', {
    transactionId: 'apple:fran-1',
    receiptId: 'apple:r-fran',
    applicationUsername: 'fran',
    productId: 'apple:pro_monthly',
    purchaseDate: T('2026-10-03'),
    expirationDate: T('2026-11-03'),
    ownershipType: 'FAMILY_SHARED',
  }),
  // gus: two subscriptions at once in different groups, each granting its own entitlement
  tx('2026-10-04', {
    transactionId: 'apple:gus-pro',
    receiptId: 'apple:r-gus',
    purchaseId: 'apple:p-gus-pro',
    applicationUsername: 'gus',
    productId: 'apple:pro_monthly',
    purchaseDate: T('2026-10-04'),
    expirationDate: T('2026-11-04'),
  }),
  tx('2026-10-05', {
    transactionId: 'apple:gus-addon',
    receiptId: 'apple:r-gus',
    purchaseId: 'apple:p-gus-addon',
    productId: 'apple:addon_yearly',
    purchaseDate: T('2026-10-05'),
    expirationDate: T('2027-10-05'),
    renewalIntent: 'Lapse',
  }),
];

describe('customerInfo.entitlements (e2e: HTTP, real PostgreSQL)', () => {
  let db: TestDatabase;
  let api: TestApp;
  let reader: string;
  let writer: string;
  const clock = new TestClock();

  const define = async (name: string, productIds: string[]) => {
    const response = await fetch(`${api.baseUrl}/v2/entitlements/${name}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${writer}`, 'content-type': 'application/json' },
      body: JSON.stringify({ productIds }),
    });
    expect(response.status).toBe(200);
  };
  const info = async (username: string) => {
    const { status, body } = await api.get(`/v2/customers?applicationUsername=${username}`, reader);
    expect(status).toBe(200);
    return body.rows[0].customerInfo;
  };
  const entitlements = async (username: string) => (await info(username)).entitlements;

  beforeAll(async () => {
    db = await createTestDatabase('customer_entitlements');
    api = await startTestApp({ databaseUrl: db.url, clock });
    reader = api.token(app, ['customers:read']);
    writer = api.token(app, ['entitlements:write']);
    // newest first: every answer also holds for events arriving out of order
    await project(db.dataSource, [...history].reverse());
  });
  afterAll(async () => {
    await api?.close();
    await db?.drop();
  });

  it('given no definitions, then no customer shows entitlements and customerInfo is as before', async () => {
    expect(await info('uma')).toEqual({
      expirationDate: '2026-11-01T00:00:00.000Z',
      lastPurchaseDate: '2026-10-01T00:00:00.000Z',
      lastRenewalDate: '2026-10-01T00:00:00.000Z',
      renewalIntent: 'Renew',
      activeSubscriber: true,
    });
  });

  describe('with pro (the pro and max products, the lifetime unlock, the coins) and max (the max monthly) defined', () => {
    beforeAll(async () => {
      clock.at = new Date('2026-10-15T12:00:00.000Z');
      await define('pro', ['apple:pro_monthly', 'apple:pro_yearly', 'apple:max_monthly', 'google:pro_monthly', 'apple:lifetime', 'google:coins']);
      await define('max', ['apple:max_monthly']);
      await define('addon', ['apple:addon_yearly']);
    });

    it('an upgrade within the subscription moves the entitlement to the new product', async () => {
      const onMax = {
        isActive: true,
        expirationDate: '2026-11-01T00:00:00.000Z',
        productId: 'apple:max_monthly',
        transactionId: 'apple:uma-m',
        purchaseDate: '2026-01-10T00:00:00.000Z',
        lastRenewalDate: '2026-10-01T00:00:00.000Z',
        renewalIntent: 'Renew',
        isInGracePeriod: false,
        isInBillingRetry: false,
      };
      expect(await entitlements('uma')).toEqual([
        { identifier: 'max', ...onMax },
        { identifier: 'pro', ...onMax },
      ]);
    });

    it('a refund of one of two granting subscriptions keeps the entitlement, on the other', async () => {
      expect(await entitlements('rita')).toEqual([
        {
          identifier: 'pro',
          isActive: true,
          expirationDate: '2026-11-01T00:00:00.000Z',
          productId: 'google:pro_monthly',
          transactionId: 'google:GPA.rita-1',
          purchaseDate: '2026-10-01T00:00:00.000Z',
          renewalIntent: 'Renew',
          isInGracePeriod: false,
          isInBillingRetry: false,
        },
      ]);
    });

    it('a lifetime (non-consumable) purchase grants for good, without expirationDate; refunded, it ended at the refund', async () => {
      expect(await entitlements('lily')).toEqual([
        {
          identifier: 'pro',
          isActive: true,
          productId: 'apple:lifetime',
          transactionId: 'apple:lily-l',
          purchaseDate: '2024-05-01T00:00:00.000Z',
          isInGracePeriod: false,
          isInBillingRetry: false,
        },
      ]);
      expect(await entitlements('rex')).toEqual([
        {
          identifier: 'pro',
          isActive: false,
          expirationDate: '2026-06-01T00:00:00.000Z',
          productId: 'apple:lifetime',
          transactionId: 'apple:rex-l',
          purchaseDate: '2026-05-01T00:00:00.000Z',
          isInGracePeriod: false,
          isInBillingRetry: false,
        },
      ]);
    });

    it('a consumable never grants, even of a listed product; a pending purchase gives nothing', async () => {
      expect(await info('cody')).toEqual({ lastPurchaseDate: '2026-09-01T00:00:00.000Z', activeSubscriber: false });
      expect(await info('pete')).toEqual({ activeSubscriber: false });
    });

    it('billing retry without grace: inactive, in billing retry; within a grace period: active, in grace', async () => {
      expect(await entitlements('bill')).toMatchObject([
        { identifier: 'pro', isActive: false, expirationDate: '2026-10-10T00:00:00.000Z', isInGracePeriod: false, isInBillingRetry: true },
      ]);
      expect(await entitlements('gina')).toMatchObject([
        { identifier: 'pro', isActive: true, expirationDate: '2026-10-26T00:00:00.000Z', isInGracePeriod: true, isInBillingRetry: false },
      ]);
    });

    it('family sharing counts; two subscriptions in different groups each grant their own', async () => {
      expect(await entitlements('fran')).toMatchObject([{ identifier: 'pro', isActive: true, productId: 'apple:pro_monthly' }]);
      expect(await entitlements('gus')).toMatchObject([
        { identifier: 'addon', isActive: true, productId: 'apple:addon_yearly', expirationDate: '2027-10-05T00:00:00.000Z', renewalIntent: 'Lapse' },
        { identifier: 'pro', isActive: true, productId: 'apple:pro_monthly', expirationDate: '2026-11-04T00:00:00.000Z' },
      ]);
    });

    it('a definition change applies at once, with no re-import: PUT, then the next GET shows it; DELETE, then gone', async () => {
      expect((await info('dora')).entitlements).toBeUndefined();
      await define('basic', ['google:basic_monthly']);
      expect(await entitlements('dora')).toMatchObject([{ identifier: 'basic', isActive: true, productId: 'google:basic_monthly' }]);
      // the coins leave pro: nothing about cody changes (they never granted); the lifetime leaves pro: lily loses it
      await define('pro', ['apple:pro_monthly', 'apple:pro_yearly', 'apple:max_monthly', 'google:pro_monthly']);
      expect((await info('lily')).entitlements).toBeUndefined();
      const remove = await fetch(`${api.baseUrl}/v2/entitlements/basic`, { method: 'DELETE', headers: { authorization: `Bearer ${writer}` } });
      expect(remove.status).toBe(204);
      expect((await info('dora')).entitlements).toBeUndefined();
    });

    it('decided at the request instant: once the access end passes, inactive with no event; the pages and filters show the same entries', async () => {
      clock.at = new Date('2026-11-02T00:00:00.000Z');
      expect(await entitlements('uma')).toMatchObject([
        { identifier: 'max', isActive: false },
        { identifier: 'pro', isActive: false },
      ]);
      clock.at = new Date('2026-10-15T12:00:00.000Z');
      const page = (await api.get('/v2/customers?limit=100', reader)).body.rows as { applicationUsername: string; customerInfo: { entitlements?: unknown } }[];
      const filtered = (await api.get('/v2/customers?status=active,grace_period', reader)).body.rows as typeof page;
      const named = Object.fromEntries(page.map((r) => [r.applicationUsername, r.customerInfo.entitlements]));
      for (const row of filtered) expect(row.customerInfo.entitlements).toEqual(named[row.applicationUsername]);
      expect(filtered.map((r) => r.applicationUsername).sort()).toEqual(['dora', 'fran', 'gina', 'gus', 'rita', 'uma']);
      expect(named.gina).toEqual(await entitlements('gina'));
    });

    it('an entitlement that ends by an event moves the customer in the change feed and in webhooks, with its entries; a change it does not read moves nobody', async () => {
      clock.at = new Date('2026-10-15T12:00:00.000Z');
      const settings = { ...api.config.webhooks, allowHosts: ['127.0.0.1'] };
      const txReader = api.token(app, ['transactions:read']);
      const endpoint = await addEndpoint(db.dataSource, settings, { appId: app, url: 'http://127.0.0.1:9/hook' });
      const queued = async () => {
        await queueChanges(db.dataSource, () => clock.at);
        return (
          (await db.dataSource.query(`SELECT event_type, payload FROM public.webhook_deliveries WHERE endpoint_id = $1 ORDER BY id`, [endpoint.id])) as {
            event_type: string;
            payload: string | { data: Row };
          }[]
        ).map((d) => ({ type: d.event_type, data: (typeof d.payload === 'string' ? JSON.parse(d.payload) : d.payload).data as Row }));
      };
      let customers = await drainFeed(api, reader, 'customers', '0', new Map());
      let transactions = await drainFeed(api, txReader, 'transactions', '0', new Map());
      const before = (await queued()).length;
      const gus = await info('gus');

      // acknowledged: a fact no entitlement reads, of gus's pro subscription (not the current one: the add-on ends later)
      const pro = {
        transactionId: 'apple:gus-pro',
        receiptId: 'apple:r-gus',
        purchaseId: 'apple:p-gus-pro',
        productId: 'apple:pro_monthly',
        purchaseDate: T('2026-10-04'),
        expirationDate: T('2026-11-04'),
      };
      await project(db.dataSource, [tx('2026-10-06', { ...pro, isAcknowledged: true })]);
      const quiet = { customers: new Map<string, Row>(), transactions: new Map<string, Row>() };
      customers = await drainFeed(api, reader, 'customers', customers, quiet.customers);
      transactions = await drainFeed(api, txReader, 'transactions', transactions, quiet.transactions);
      expect([...quiet.transactions.keys()]).toEqual(['apple:gus-pro']);
      expect([...quiet.customers.keys()]).toEqual([]);
      expect((await queued()).slice(before).map((d) => d.type)).toEqual(['transaction.updated']);

      // refunded: pro ends; gus's summary (the add-on) is unchanged, the customer moves all the same
      await project(db.dataSource, [
        tx('2026-10-07', { ...pro, isAcknowledged: true, revocationDate: T('2026-10-07'), isExpired: true, renewalIntent: 'Lapse' }),
      ]);
      expect(await info('gus')).toMatchObject({ expirationDate: gus.expirationDate, lastPurchaseDate: gus.lastPurchaseDate, renewalIntent: gus.renewalIntent });
      const moved = { customers: new Map<string, Row>(), transactions: new Map<string, Row>() };
      await drainFeed(api, reader, 'customers', customers, moved.customers);
      await drainFeed(api, txReader, 'transactions', transactions, moved.transactions);
      expect([...moved.customers.keys()]).toEqual(['gus']);
      const ended = [
        { identifier: 'addon', isActive: true, productId: 'apple:addon_yearly' },
        { identifier: 'pro', isActive: false, productId: 'apple:pro_monthly', expirationDate: '2026-10-07T00:00:00.000Z' },
      ];
      expect((moved.customers.get('gus')!.customerInfo as { entitlements: unknown }).entitlements).toMatchObject(ended);
      const sent = (await queued()).slice(before + 1);
      expect(sent.map((d) => d.type).sort()).toEqual(['customer.updated', 'transaction.updated']);
      const customerUpdated = sent.find((d) => d.type === 'customer.updated')!;
      expect(customerUpdated.data).toMatchObject({ applicationUsername: 'gus', customerInfo: { entitlements: ended } });
    });

    it('another application reads none of these definitions', async () => {
      await project(db.dataSource, [
        txEvent({
          app: 'ent-other',
          time: T('2026-10-01'),
          data: { transactionId: 'apple:o-1', applicationUsername: 'olga', productId: 'apple:pro_monthly', expirationDate: T('2026-11-01') },
        }),
      ]);
      const { body } = await api.get('/v2/customers?applicationUsername=olga', api.token('ent-other', ['customers:read']));
      expect(body.rows[0].customerInfo.entitlements).toBeUndefined();
    });
  });
});
