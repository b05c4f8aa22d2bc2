import { jest } from '@jest/globals';
import type { Clock } from '../../src/common/clock.js';
import { appendToEventLog } from '../../src/event-log/event-log.js';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { expectEventually } from '../utils/expect-eventually.js';
import { linkEvent, txEvent } from '../utils/events.js';
import { createTopic, kafkaBrokers, produce, uniqueTopic, waitUntilCaughtUp } from '../utils/kafka.js';

// The scenarios the lifecycle issue reported as wrong, each with the answer the rules give written
// out, through the real consumer (Kafka and the embedded log) and over HTTP. Published newest first,
// so every answer also holds for events arriving out of order.

jest.setTimeout(120_000);

const NOW = new Date('2026-10-15T12:00:00.000Z');
const clock: Clock = { now: () => NOW };
const T = (day: string) => `${day}T00:00:00.000Z`;

const events = [
  // A renewal is its own transaction, filed at its own charge date; a corrected purchaseDate re-files.
  txEvent({
    app: 'renewals',
    id: 'r1',
    time: T('2026-08-08'),
    data: {
      transactionId: 'apple:m-1',
      receiptId: 'apple:r-m',
      purchaseId: 'apple:p-m',
      purchaseDate: T('2026-08-08'),
      expirationDate: T('2026-09-08'),
      applicationUsername: 'rita',
    },
  }),
  txEvent({
    app: 'renewals',
    id: 'r2',
    time: T('2026-09-08'),
    data: {
      transactionId: 'apple:m-2',
      receiptId: 'apple:r-m',
      purchaseId: 'apple:p-m',
      purchaseDate: T('2026-08-08'),
      lastRenewalDate: T('2026-09-08'),
      expirationDate: T('2026-10-08'),
    },
  }),
  txEvent({ app: 'renewals', id: 'r3', time: T('2026-09-20'), data: { transactionId: 'apple:x-1', receiptId: 'apple:r-x', purchaseDate: T('2026-09-20') } }),
  txEvent({ app: 'renewals', id: 'r4', time: T('2026-10-03'), data: { transactionId: 'apple:x-1', receiptId: 'apple:r-x', purchaseDate: T('2026-10-02') } }),

  // A refunded yearly (Apple keeps its expiresDate) does not hide an active monthly.
  txEvent({
    app: 'refund',
    id: 'f1',
    time: T('2026-01-10'),
    data: {
      transactionId: 'apple:y-1',
      receiptId: 'apple:r-f',
      purchaseDate: T('2026-01-10'),
      expirationDate: T('2027-01-10'),
      renewalIntent: 'Renew',
      applicationUsername: 'fay',
    },
  }),
  txEvent({
    app: 'refund',
    id: 'f2',
    time: T('2026-03-01'),
    data: {
      transactionId: 'apple:y-1',
      receiptId: 'apple:r-f',
      purchaseDate: T('2026-01-10'),
      expirationDate: T('2027-01-10'),
      renewalIntent: 'Lapse',
      isExpired: true,
      revocationDate: T('2026-03-01'),
      cancelationReason: 'Customer',
    },
  }),
  txEvent({
    app: 'refund',
    id: 'f3',
    time: T('2026-10-01'),
    data: { transactionId: 'apple:m-1', receiptId: 'apple:r-f', purchaseDate: T('2026-10-01'), expirationDate: T('2026-11-01'), renewalIntent: 'Renew' },
  }),

  // A yearly replaced by a monthly no longer keeps the customer active until the yearly's expiry.
  txEvent({
    app: 'upgrade',
    id: 'u1',
    time: T('2026-02-01'),
    data: {
      transactionId: 'apple:y-1',
      receiptId: 'apple:r-u',
      purchaseDate: T('2026-02-01'),
      expirationDate: T('2027-02-01'),
      renewalIntent: 'Renew',
      applicationUsername: 'uma',
    },
  }),
  txEvent({
    app: 'upgrade',
    id: 'u2',
    time: T('2026-09-01'),
    data: {
      transactionId: 'apple:y-1',
      receiptId: 'apple:r-u',
      purchaseDate: T('2026-02-01'),
      expirationDate: T('2027-02-01'),
      renewalIntent: 'Renew',
      cancelationReason: 'System.Replaced',
    },
  }),
  txEvent({
    app: 'upgrade',
    id: 'u3',
    time: T('2026-09-01'),
    data: { transactionId: 'apple:m-1', receiptId: 'apple:r-u', purchaseDate: T('2026-09-01'), expirationDate: T('2026-10-01'), renewalIntent: 'Lapse' },
  }),

  // Issue 21: an upgrade as Apple sends it, only the new product's transaction of the same subscription.
  txEvent({
    app: 'upgrade-apple',
    id: 'w1',
    time: T('2026-01-10'),
    data: {
      transactionId: 'apple:w-1',
      receiptId: 'apple:w-1',
      purchaseId: 'apple:w-1',
      productId: 'apple:pro_yearly',
      purchaseDate: T('2026-01-10'),
      expirationDate: T('2027-01-10'),
      renewalIntent: 'Renew',
      applicationUsername: 'vic',
    },
  }),
  txEvent({
    app: 'upgrade-apple',
    id: 'w2',
    time: T('2026-10-01'),
    data: {
      transactionId: 'apple:w-2',
      receiptId: 'apple:w-1',
      purchaseId: 'apple:w-1',
      productId: 'apple:max_monthly',
      purchaseDate: T('2026-01-10'),
      lastRenewalDate: T('2026-10-01'),
      expirationDate: T('2026-11-01'),
      renewalIntent: 'Renew',
    },
  }),

  // A pending purchase grants nothing.
  txEvent({
    app: 'pending',
    id: 'p1',
    time: T('2026-10-14'),
    data: {
      transactionId: 'google:o-1',
      receiptId: 'google:tok-1',
      purchaseDate: T('2026-10-14'),
      expirationDate: T('2026-11-14'),
      isPending: true,
      applicationUsername: 'pia',
    },
  }),

  // Billing grace period: access continues until the grace end.
  txEvent({
    app: 'grace',
    id: 'g1',
    time: T('2026-10-10'),
    data: {
      transactionId: 'apple:g-1',
      receiptId: 'apple:r-g',
      purchaseDate: T('2026-09-10'),
      expirationDate: T('2026-10-10'),
      renewalIntent: 'Renew',
      isBillingRetryPeriod: true,
      gracePeriodExpirationDate: T('2026-10-26'),
      applicationUsername: 'gus',
    },
  }),

  // A transaction moving to another receipt leaves its previous owner.
  linkEvent({ app: 'move', id: 'v1', time: T('2026-06-01'), receiptId: 'apple:r-ann', user: 'ann' }),
  linkEvent({ app: 'move', id: 'v2', time: T('2026-06-01'), receiptId: 'apple:r-bob', user: 'bob' }),
  txEvent({
    app: 'move',
    id: 'v3',
    time: T('2026-06-02'),
    data: { transactionId: 'apple:t-1', receiptId: 'apple:r-ann', purchaseDate: T('2026-06-02'), expirationDate: T('2026-12-02') },
  }),
  txEvent({
    app: 'move',
    id: 'v4',
    time: T('2026-07-01'),
    data: { transactionId: 'apple:t-1', receiptId: 'apple:r-bob', purchaseDate: T('2026-06-02'), expirationDate: T('2026-12-02') },
  }),

  // A restore is not undone by a renewal still carrying the original applicationUsername.
  txEvent({
    app: 'restore',
    id: 's1',
    time: T('2026-05-01'),
    data: { transactionId: 'apple:s-1', receiptId: 'apple:r-s', purchaseDate: T('2026-05-01'), expirationDate: T('2026-06-01'), applicationUsername: 'old' },
  }),
  linkEvent({ app: 'restore', id: 's2', time: T('2026-05-20'), receiptId: 'apple:r-s', user: 'new' }),
  txEvent({
    app: 'restore',
    id: 's3',
    time: T('2026-06-01'),
    data: {
      transactionId: 'apple:s-2',
      receiptId: 'apple:r-s',
      purchaseDate: T('2026-05-01'),
      lastRenewalDate: T('2026-06-01'),
      expirationDate: T('2026-12-01'),
      applicationUsername: 'old',
    },
  }),
].reverse();

const key = (e: Record<string, unknown>) => String((e.data as { receiptId: string }).receiptId);

describe.each(['embedded log', 'kafka'] as const)('lifecycle scenarios over HTTP (e2e, %s)', (mode) => {
  let db: TestDatabase;
  let api: TestApp;
  let topic: string;

  beforeAll(async () => {
    db = await createTestDatabase(`life${mode === 'kafka' ? 'k' : 'e'}`);
    topic = uniqueTopic('life');
    const values = events.map((e) => ({ key: key(e), value: Buffer.from(JSON.stringify(e)) }));
    if (mode === 'kafka') {
      await createTopic(topic, 3);
      api = await startTestApp({
        databaseUrl: db.url,
        clock,
        env: { CONSUMER_ENABLED: 'true', KAFKA_BROKERS: kafkaBrokers(), KAFKA_TOPIC: topic, KAFKA_GROUP_ID: `g-${topic}` },
      });
      await produce(
        topic,
        values.map((v) => v.value),
      );
      await waitUntilCaughtUp(db.dataSource, topic, 60_000);
    } else {
      api = await startTestApp({ databaseUrl: db.url, clock, env: { CONSUMER_ENABLED: 'true', KAFKA_TOPIC: topic } });
      await appendToEventLog(db.dataSource, topic, values);
      await expectEventually(async () => {
        const [row] = await db.dataSource.query(`SELECT next_offset::int AS n FROM read_model.projection_offsets WHERE topic = $1`, [topic]);
        expect(row?.n).toBe(events.length);
      });
    }
  });
  afterAll(async () => {
    await api?.close();
    await db?.drop();
  });

  const get = async (app: string, path: string) => {
    const res = await api.get(path, api.token(app));
    expect(res.status).toBe(200);
    return res.body;
  };
  const customer = async (app: string, name: string) => (await get(app, `/v2/customers?applicationUsername=${encodeURIComponent(name)}`)).rows[0];

  it('a renewal charged on 09-08 is in September; a purchase corrected to 10-02 is not', async () => {
    const september = await get('renewals', '/v2/transactions?startdate=2026-09-01T00:00:00Z&enddate=2026-10-01T00:00:00Z');
    expect(september.rows.map((r: { transactionId: string }) => r.transactionId)).toEqual(['apple:m-2']);
    expect(september.paging.total).toBe(1);
    const all = await get('renewals', '/v2/transactions');
    expect(all.rows.map((r: { transactionId: string }) => r.transactionId)).toEqual(['apple:m-1', 'apple:m-2', 'apple:x-1']);
    expect((await get('renewals', '/v2/transactions?startdate=2026-10-01T00:00:00Z')).rows.map((r: { transactionId: string }) => r.transactionId)).toEqual([
      'apple:x-1',
    ]);
  });

  it('a refunded yearly no longer drives the summary: the monthly does', async () => {
    expect(await customer('refund', 'fay')).toEqual({
      applicationUsername: 'fay',
      receiptIds: ['apple:r-f'],
      customerInfo: { activeSubscriber: true, expirationDate: T('2026-11-01'), lastPurchaseDate: T('2026-10-01'), renewalIntent: 'Renew' },
    });
    const [refunded] = (await get('refund', '/v2/transactions')).rows;
    expect(refunded).toMatchObject({ transactionId: 'apple:y-1', revocationDate: T('2026-03-01'), isExpired: true, cancelationReason: 'Customer' });
  });

  it('an upgraded yearly does not keep the customer active; the monthly replacing it lapsed on 10-01', async () => {
    expect((await customer('upgrade', 'uma')).customerInfo).toEqual({
      activeSubscriber: false,
      expirationDate: T('2026-10-01'),
      lastPurchaseDate: T('2026-09-01'),
      renewalIntent: 'Lapse',
    });
  });

  it('an upgrade Apple sends as the new transaction alone replaces the yearly at 10-01; the monthly is current', async () => {
    expect((await customer('upgrade-apple', 'vic')).customerInfo).toEqual({
      activeSubscriber: true,
      expirationDate: T('2026-11-01'),
      lastPurchaseDate: T('2026-10-01'),
      lastRenewalDate: T('2026-10-01'),
      renewalIntent: 'Renew',
    });
    expect((await get('upgrade-apple', '/v2/transactions')).rows).toEqual([
      expect.objectContaining({ transactionId: 'apple:w-1', expirationDate: T('2027-01-10'), isUpgraded: true, cancelationReason: 'System.Replaced' }),
      expect.not.objectContaining({ isUpgraded: true }),
    ]);
  });

  it('a pending purchase does not make a subscriber', async () => {
    expect((await customer('pending', 'pia')).customerInfo).toEqual({ activeSubscriber: false });
    expect((await get('pending', '/v2/transactions')).rows[0]).toMatchObject({ isPending: true });
  });

  it('a grace period keeps access until the grace end, shown as expirationDate', async () => {
    expect((await customer('grace', 'gus')).customerInfo).toEqual({
      activeSubscriber: true,
      expirationDate: T('2026-10-26'),
      lastPurchaseDate: T('2026-09-10'),
      renewalIntent: 'Renew',
    });
    expect((await get('grace', '/v2/transactions')).rows[0]).toMatchObject({ isBillingRetryPeriod: true, gracePeriodExpirationDate: T('2026-10-26') });
  });

  it('a transaction that moved receipts leaves its previous owner', async () => {
    expect(await customer('move', 'ann')).toEqual({ applicationUsername: 'ann', receiptIds: ['apple:r-ann'], customerInfo: {} });
    expect((await customer('move', 'bob')).customerInfo).toEqual({
      activeSubscriber: true,
      expirationDate: T('2026-12-02'),
      lastPurchaseDate: T('2026-06-02'),
    });
  });

  it('a restore stays with the new account when a renewal carries the original username', async () => {
    expect(await customer('restore', 'old')).toEqual({ applicationUsername: 'old', receiptIds: [], customerInfo: {} });
    expect(await customer('restore', 'new')).toEqual({
      applicationUsername: 'new',
      receiptIds: ['apple:r-s'],
      customerInfo: { activeSubscriber: true, expirationDate: T('2026-12-01'), lastPurchaseDate: T('2026-06-01'), lastRenewalDate: T('2026-06-01') },
    });
  });
});
