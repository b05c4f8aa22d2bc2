import { plusOneYear, usdPerUnit, type EcbRates } from '../model/reference-model.js';
import { loadRates as loadEcbRates } from '../../src/fx/load-rates.js';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { project, txEvent } from '../utils/events.js';

// Revenue in USD (issue 43, docs/revenue.md): amountUSD at the charge day's rate, proceeds, partial
// refunds on the rows, and GET /v2/revenue equal to sums the test computes from the listed rows.

const T = (day: string, time = '12:00:00') => `${day}T${time}.000Z`;

/** ECB rates, units per euro: Thursday 26 and Friday 27 November 2026 (no rates at the weekend). */
const RATES: EcbRates = {
  '2026-11-26': { USD: 1.04, JPY: 159, GBP: 0.86 },
  '2026-11-27': { USD: 1.05, JPY: 160, GBP: 0.85 },
};

/** Through the service's loader (fx import's), which re-derives the USD months the rates reach. */
async function loadRates(db: TestDatabase, rates: EcbRates): Promise<void> {
  const rows = Object.entries(rates).flatMap(([day, quoted]) =>
    Object.entries(quoted).map(([currency, perEur]) => ({ currency, day, perEur: String(perEur) })),
  );
  await loadEcbRates(db.dataSource, rows);
}

describe('revenue in USD (e2e, real PostgreSQL)', () => {
  let db: TestDatabase;
  let api: TestApp;
  let token: string;
  const app = 'revenue';

  beforeAll(async () => {
    db = await createTestDatabase('revenue');
    api = await startTestApp({ databaseUrl: db.url });
    token = api.token(app, ['transactions:read']);
  });
  afterAll(async () => {
    await api?.close();
    await db?.drop();
  });

  const row = async (transactionId: string) => {
    const res = await api.get(`/v2/transactions?transactionId=${transactionId}`, token);
    expect(res.status).toBe(200);
    return res.body.rows[0];
  };
  const report = async (query: string, as = token) => {
    const res = await api.get(`/v2/revenue?${query}`, as);
    expect(res.status).toBe(200);
    return res.body;
  };

  describe('given rows in several currencies', () => {
    beforeAll(async () => {
      await project(db.dataSource, [
        // bought on Thursday, before any rate is loaded
        txEvent({
          app,
          time: T('2026-11-26'),
          data: { transactionId: 'apple:jpy', purchaseDate: T('2026-11-26'), amountMicros: 1_000_000_000, currency: 'JPY' },
        }),
        // bought on Sunday: Friday's rate
        txEvent({ app, time: T('2026-11-29'), data: { transactionId: 'apple:eur', purchaseDate: T('2026-11-29'), amountMicros: 9_990_000, currency: 'EUR' } }),
        // a currency the bank does not quote
        txEvent({
          app,
          time: T('2026-11-27'),
          data: { transactionId: 'apple:ars', purchaseDate: T('2026-11-27'), amountMicros: 5_000_000_000, currency: 'ARS' },
        }),
        // the producer's own USD wins
        txEvent({
          app,
          time: T('2026-11-27'),
          data: { transactionId: 'apple:own', purchaseDate: T('2026-11-27'), amountMicros: 4_990_000, currency: 'EUR', amountUSD: 5.49 },
        }),
        // a renewal after the subscriber's first year: Apple's reduced commission
        txEvent({
          app,
          time: T('2026-11-27'),
          data: {
            transactionId: 'apple:renewal',
            purchaseId: 'apple:first',
            purchaseDate: T('2025-11-01'),
            lastRenewalDate: T('2026-11-27'),
            expirationDate: T('2026-12-27'),
            amountMicros: 4_990_000,
            currency: 'USD',
          },
        }),
        // Google: 15% from the first day
        txEvent({
          app,
          time: T('2026-11-27'),
          data: { transactionId: 'google:GPA.1', purchaseDate: T('2026-11-27'), amountMicros: 8_500_000, currency: 'GBP' },
        }),
        // half refunded (Apple REFUND_PRORATED, revocationPercentage 50000)
        txEvent({
          app,
          time: T('2026-11-28'),
          data: {
            transactionId: 'apple:half',
            purchaseDate: T('2026-11-27'),
            expirationDate: T('2026-12-27'),
            amountMicros: 10_000_000,
            currency: 'USD',
            revocationDate: T('2026-11-28'),
            revocationType: 'REFUND_PRORATED',
            refundedShare: 0.5,
          },
        }),
        // refunded whole (no type: a revocation refunds all of it)
        txEvent({
          app,
          time: T('2026-11-28'),
          data: { transactionId: 'apple:full', purchaseDate: T('2026-11-27'), amountMicros: 2_000_000, currency: 'USD', revocationDate: T('2026-11-28') },
        }),
        // not money: sandbox, pending, a family member's shared access
        txEvent({
          app,
          time: T('2026-11-27'),
          data: { transactionId: 'apple:sandbox', purchaseDate: T('2026-11-27'), amountMicros: 1_000_000, currency: 'USD', sandbox: true },
        }),
        txEvent({
          app,
          time: T('2026-11-27'),
          data: { transactionId: 'apple:pending', purchaseDate: T('2026-11-27'), amountMicros: 1_000_000, currency: 'USD', isPending: true },
        }),
        txEvent({
          app,
          time: T('2026-11-27'),
          data: { transactionId: 'apple:family', purchaseDate: T('2026-11-27'), amountMicros: 1_000_000, currency: 'USD', ownershipType: 'FAMILY_SHARED' },
        }),
        // no amount at all
        txEvent({ app, time: T('2026-11-27'), data: { transactionId: 'apple:free', purchaseDate: T('2026-11-27') } }),
      ]);
    });

    it('without rates, only USD amounts are known; rates loaded later apply to the old rows at once', async () => {
      expect(await row('apple:jpy')).not.toHaveProperty('amountUSD');
      expect(await row('apple:renewal')).toMatchObject({ amountUSD: 4.99, priceUSD: 4.99 });
      await loadRates(db, RATES);
      // 1,000 JPY at Thursday's rate: 1000 x 1.04 / 159 = 6.5408... -> 6.54
      expect(await row('apple:jpy')).toMatchObject({ amountUSD: 6.54, priceUSD: 6.54, amountMicros: 1_000_000_000, currency: 'JPY' });
    });

    it('a weekend purchase takes the last business day before it; a currency without a rate has no amountUSD; the producer wins', async () => {
      // 9.99 EUR x 1.05 = 10.4895 -> 10.49; proceeds 30%: 10.4895 rounded then x 0.7 = 7.343 -> 7.34
      expect(await row('apple:eur')).toMatchObject({ amountUSD: 10.49, proceedsUSD: 7.34, proceedsMicros: 6_993_000 });
      const ars = await row('apple:ars');
      expect(ars).not.toHaveProperty('amountUSD');
      expect(ars).not.toHaveProperty('proceedsUSD');
      expect(ars.proceedsMicros).toBe(3_500_000_000);
      expect(await row('apple:own')).toMatchObject({ amountUSD: 5.49, proceedsUSD: 3.84 });
    });

    it('proceeds: Apple 30%, 15% after the first year; Google 15%; a partial refund is taken off', async () => {
      expect(await row('apple:renewal')).toMatchObject({ proceedsUSD: 4.24, proceedsMicros: 4_241_500 });
      // 8.50 GBP x 1.05 / 0.85 = 10.50; x 0.85 = 8.925 -> 8.93
      expect(await row('google:GPA.1')).toMatchObject({ amountUSD: 10.5, proceedsUSD: 8.93 });
      expect(await row('apple:half')).toMatchObject({ revocationType: 'REFUND_PRORATED', refundedShare: 0.5, amountUSD: 10, proceedsUSD: 3.5 });
      const full = await row('apple:full');
      expect(full).toMatchObject({ refundedShare: 1, proceedsUSD: 0 });
      expect(full).not.toHaveProperty('revocationType');
    });

    it('the report: exact sums in USD, refunds, proceeds, and rows without an amount or a rate counted apart', async () => {
      const gross = 6.5408805 + 10.4895 + 5.49 + 4.99 + 10.5 + 10 + 2; // jpy, eur, own, renewal, google, half, full
      const refunds = 5 + 2;
      const proceeds = (6.5408805 + 10.4895 + 5.49) * 0.7 + 4.99 * 0.85 + 10.5 * 0.85 + 5 * 0.7;
      expect(await report('startdate=2026-11-01&enddate=2026-12-01')).toEqual({
        startdate: '2026-11-01',
        enddate: '2026-12-01',
        totals: {
          grossUSD: Math.round(gross * 100) / 100,
          refundsUSD: refunds,
          proceedsUSD: Math.round(proceeds * 100) / 100,
          transactions: 9, // jpy, eur, ars, own, renewal, google, half, full, free
          unconverted: 1,
          unpriced: 1,
        },
      });
      const byPlatform = await report('startdate=2026-11-01&enddate=2026-12-01&groupBy=platform');
      expect(byPlatform.groups.map((g: { key: string; transactions: number; grossUSD: number }) => [g.key, g.transactions, g.grossUSD])).toEqual([
        ['apple', 8, Math.round((gross - 10.5) * 100) / 100],
        ['google', 1, 10.5],
      ]);
      const byDay = await report('startdate=2026-11-26&enddate=2026-11-30&groupBy=day');
      expect(byDay.groups.map((g: { key: string; transactions: number }) => [g.key, g.transactions])).toEqual([
        ['2026-11-26', 1],
        ['2026-11-27', 7],
        ['2026-11-29', 1],
      ]);
      expect((await report('startdate=2026-11-28&enddate=2026-11-29')).totals.transactions).toBe(0);
    });

    it('bad parameters are named', async () => {
      for (const [query, parameter] of [
        ['enddate=2026-12-01', 'startdate'],
        ['startdate=2026-11-01', 'enddate'],
        ['startdate=2026-11-01T10:00:00Z&enddate=2026-12-01', 'startdate'],
        ['startdate=2026-12-01&enddate=2026-11-01', 'enddate'],
        ['startdate=2026-11-01&enddate=2026-12-01&groupBy=week', 'groupBy'],
        ['startdate=2026-11-01&enddate=2026-12-01&currency=EUR', 'currency'],
      ]) {
        const res = await api.get(`/v2/revenue?${query}`, token);
        expect({ query, status: res.status, parameter: res.body.parameter ?? res.body.detail }).toMatchObject({ query, status: 400 });
        expect(JSON.stringify(res.body)).toContain(parameter);
      }
      expect((await api.get('/v2/revenue?startdate=2026-11-01&enddate=2026-12-01', api.token(app, ['customers:read']))).status).toBe(403);
    });
  });

  it('generated histories: the report equals the sums of the listed rows at several ranges, refunds and corrections included', async () => {
    const genApp = 'revenue-gen';
    const genToken = api.token(genApp, ['transactions:read']);
    let seed = 20261128;
    // mulberry32: a seeded generator, so a failure replays
    const rnd = () => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)];
    const rates: EcbRates = {};
    // business days from August 2025 (the rows start in September), with a gap in the bank's quotes
    // in March 2026 longer than the 14 days looked back; it never quotes SEK on Wednesdays
    for (let d = Date.UTC(2025, 7, 1); d < Date.UTC(2026, 11, 1); d += 86_400_000) {
      if (d >= Date.UTC(2026, 2, 1) && d < Date.UTC(2026, 2, 20)) continue;
      const weekday = new Date(d).getUTCDay();
      if (weekday === 0 || weekday === 6) continue;
      const day = new Date(d).toISOString().slice(0, 10);
      rates[day] = { USD: 1 + rnd() * 0.2, JPY: 150 + rnd() * 20, GBP: 0.8 + rnd() * 0.1, ...(weekday === 3 ? {} : { SEK: 11 + rnd() }) };
    }
    await loadRates(db, rates);
    const events: Record<string, unknown>[] = [];
    for (let i = 0; i < 300; i++) {
      const id = `${pick(['apple', 'google'])}:${Math.floor(rnd() * 1e12).toString(36)}`;
      const purchased = Date.UTC(2025, 8, 1) + Math.floor(rnd() * 440 * 86_400_000);
      // charges until 20 November 2026: the log refuses events dated ahead of it
      const renewed = rnd() < 0.4 ? Math.min(purchased + Math.floor(rnd() * 400) * 86_400_000, Date.UTC(2026, 10, 20)) : undefined;
      const charged = renewed ?? purchased;
      const data: Record<string, unknown> & { transactionId: string } = {
        transactionId: id,
        productId: `${id.split(':')[0]}:${pick(['monthly', 'yearly', 'coins'])}`,
        purchaseDate: new Date(purchased).toISOString(),
        ...(renewed !== undefined ? { lastRenewalDate: new Date(renewed).toISOString() } : {}),
        ...(rnd() < 0.7 ? { expirationDate: new Date(charged + 30 * 86_400_000).toISOString() } : {}),
        ...(rnd() < 0.9 ? { amountMicros: Math.floor(rnd() * 50_000_000), currency: pick(['USD', 'EUR', 'JPY', 'GBP', 'SEK', 'CHF']) } : {}),
        ...(rnd() < 0.1 ? { amountUSD: Math.round(rnd() * 5000) / 100 } : {}),
        ...(rnd() < 0.05 ? { sandbox: true } : {}),
        ...(rnd() < 0.05 ? { isPending: true } : {}),
      };
      events.push(txEvent({ app: genApp, time: new Date(charged).toISOString(), data }));
      const r = rnd();
      if (r < 0.15) {
        // a later snapshot refunds it, whole or in part
        const revoked = { ...data, revocationDate: new Date(charged + 86_400_000).toISOString() };
        if (r < 0.07) Object.assign(revoked, { revocationType: 'REFUND_PRORATED', refundedShare: Math.round(rnd() * 100) / 100 });
        events.push(txEvent({ app: genApp, time: new Date(charged + 86_400_000).toISOString(), data: revoked }));
      } else if (r < 0.2) {
        // a corrected price moves it to another currency
        events.push(txEvent({ app: genApp, time: new Date(charged + 3_600_000).toISOString(), data: { ...data, amountMicros: 7_000_000, currency: 'GBP' } }));
      }
    }
    // stores send in time order; batches of 25
    events.sort((a, b) => String(a.time).localeCompare(String(b.time)));
    for (let i = 0; i < events.length; i += 25) {
      const outcome = await project(db.dataSource, events.slice(i, i + 25));
      expect(outcome).toMatchObject({ kind: 'applied', deadLetters: [] });
    }

    type Row = Record<string, unknown> & { platform: string; productId: string };
    const rows: Row[] = [];
    for (let skip = 0; ; skip += 100) {
      const res = await api.get(`/v2/transactions?skip=${skip}&limit=100`, genToken);
      rows.push(...res.body.rows);
      if (rows.length >= res.body.paging.total) break;
    }
    const COMMISSION: Record<string, [number, number]> = { apple: [0.3, 0.15], google: [0.15, 0.15] };
    const ranges = [
      ['2025-09-01', '2027-01-01'],
      ['2026-10-01', '2026-11-01'],
      ['2026-11-14', '2026-11-15'],
      ['2026-02-01', '2026-06-01'],
      ['2026-01-20', '2026-04-10'],
    ];
    for (const [start, end] of ranges) {
      for (const groupBy of ['platform', 'product', 'day'] as const) {
        const expected = new Map<
          string,
          { gross: number; refunds: number; proceeds: number; transactions: number; unconverted: number; unpriced: number; rounded: number }
        >();
        for (const t of rows) {
          if (t.sandbox === true || t.isPending === true || t.ownershipType === 'FAMILY_SHARED') continue;
          const chargedAt = Date.parse((t.lastRenewalDate ?? t.purchaseDate) as string);
          const day = new Date(chargedAt).toISOString().slice(0, 10);
          if (day < start || day >= end) continue;
          const key = groupBy === 'platform' ? t.platform : groupBy === 'product' ? t.productId : day;
          const sum = expected.get(key) ?? { gross: 0, refunds: 0, proceeds: 0, transactions: 0, unconverted: 0, unpriced: 0, rounded: 0 };
          expected.set(key, sum);
          sum.transactions += 1;
          // the exact amount from the row's facts: the producer's USD, else micros at the day's rate
          const event = events.filter((e) => (e.data as Row).transactionId === t.transactionId).at(-1)!.data as Row;
          const rate = typeof t.currency === 'string' ? usdPerUnit(rates, t.currency, chargedAt) : undefined;
          const usd =
            (event.amountUSD as number | undefined) ??
            (t.amountMicros !== undefined && rate !== undefined ? ((t.amountMicros as number) / 1e6) * rate : undefined);
          if (usd === undefined) {
            if (t.amountMicros !== undefined && t.currency !== undefined) sum.unconverted += 1;
            else sum.unpriced += 1;
            continue;
          }
          // the share from the event, as docs/revenue.md says: a revocation refunds its refundedShare, else all
          const share = event.revocationDate === undefined ? 0 : ((event.refundedShare as number | undefined) ?? 1);
          const later = t.expirationDate !== undefined && chargedAt >= plusOneYear(Date.parse(t.purchaseDate as string));
          const [standard, reduced] = COMMISSION[t.platform];
          sum.gross += usd;
          sum.refunds += usd * share;
          sum.proceeds += (usd - usd * share) * (1 - (later ? reduced : standard));
          sum.rounded += t.amountUSD as number;
        }
        const got = await report(`startdate=${start}&enddate=${end}&groupBy=${groupBy}`, genToken);
        const all = [...expected.values()];
        const total = (f: (x: (typeof all)[number]) => number) => all.reduce((a, x) => a + f(x), 0);
        expect({ transactions: got.totals.transactions, unconverted: got.totals.unconverted, unpriced: got.totals.unpriced }).toEqual({
          transactions: total((x) => x.transactions),
          unconverted: total((x) => x.unconverted),
          unpriced: total((x) => x.unpriced),
        });
        expect(Math.abs(got.totals.grossUSD - total((x) => x.gross))).toBeLessThanOrEqual(0.005 + 1e-6);
        expect(Math.abs(got.totals.refundsUSD - total((x) => x.refunds))).toBeLessThanOrEqual(0.005 + 1e-6);
        expect(Math.abs(got.totals.proceedsUSD - total((x) => x.proceeds))).toBeLessThanOrEqual(0.005 + 1e-6);
        expect(got.groups.map((g: { key: string }) => g.key).sort()).toEqual([...expected.keys()].sort());
        for (const g of got.groups) {
          const want = expected.get(g.key)!;
          const context = `${start}..${end} ${groupBy}=${g.key}`;
          expect({ context, transactions: g.transactions, unconverted: g.unconverted, unpriced: g.unpriced }).toEqual({
            context,
            transactions: want.transactions,
            unconverted: want.unconverted,
            unpriced: want.unpriced,
          });
          // the report is the exact sum, rounded once to the cent
          expect(Math.abs(g.grossUSD - want.gross)).toBeLessThanOrEqual(0.005 + 1e-6);
          expect(Math.abs(g.refundsUSD - want.refunds)).toBeLessThanOrEqual(0.005 + 1e-6);
          expect(Math.abs(g.proceedsUSD - want.proceeds)).toBeLessThanOrEqual(0.005 + 1e-6);
          // and the rows' own (rounded) amounts add up to it within half a cent each
          expect(Math.abs(g.grossUSD - want.rounded)).toBeLessThanOrEqual(0.005 * (want.transactions + 1));
        }
      }
    }
    expect(rows.length).toBe(300);
  });
});
