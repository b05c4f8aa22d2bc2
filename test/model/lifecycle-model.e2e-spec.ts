import { jest } from '@jest/globals';
import fc from 'fast-check';
import { createHmac } from 'node:crypto';
import type { Clock } from '../../src/common/clock.js';
import { appendToEventLog, readEventLog } from '../../src/event-log/event-log.js';
import { applyBatch } from '../../src/projection/apply-batch.js';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { runCli } from '../utils/processes.js';
import {
  erasuresBeforeLaterEvents,
  expandHistory,
  historyArbitrary,
  NOW_INSTANTS,
  USERS,
  type DefinitionsSpec,
  type HistorySpec,
  type UsernameHash,
} from './lifecycle-generator.js';
import { ReferenceModel, type CustomerFilters, type CustomerStatus, type RawEvent, type TransactionFilters } from './reference-model.js';
import { REGRESSION_HISTORIES } from './regressions.js';

// The service against the reference model: generated store lifecycles are published to the
// embedded log in a random arrival order (redeliveries included), projected in random batch splits,
// and every endpoint answer, at several instants, must equal the model's; `rebuild --verify` must
// then find no drift, and after `rebuild` every answer must equal the model's again. Histories hold
// customer erasures (customer.erased by name or keyed hash) and re-signups. Each history's apps
// define entitlements through the API before the first comparison (so every customers answer holds
// customerInfo.entitlements), then change them (PUT, DELETE) after the rebuild: every customers
// answer at the instants must follow the new definitions over the same history. MODEL_RUNS sets the number of histories (npm run test:model -- --runs N);
// MODEL_SEED replays a reported failure.

const RUNS = Number(process.env.MODEL_RUNS ?? 12);
const SEED = process.env.MODEL_SEED === undefined ? undefined : Number(process.env.MODEL_SEED);
jest.setTimeout(Math.max(300_000, RUNS * 30_000));

class TestClock implements Clock {
  at = new Date();
  now(): Date {
    return this.at;
  }
}

describe('lifecycle rules: the service equals the reference model (e2e, real PostgreSQL, embedded log)', () => {
  let db: TestDatabase;
  let api: TestApp;
  const clock = new TestClock();
  const topic = 'model-events';
  let history = 0;
  // docs/privacy.md: HMAC-SHA256 of appid, NUL, username under public.erasure_key (written here, not imported)
  let hash: UsernameHash;

  beforeAll(async () => {
    db = await createTestDatabase('model');
    api = await startTestApp({ databaseUrl: db.url, clock, env: { KAFKA_TOPIC: topic } });
    const [{ key }] = (await db.dataSource.query('SELECT key FROM public.erasure_key')) as { key: Buffer }[];
    hash = (app, name) => createHmac('sha256', key).update(`${app}\u0000${name}`, 'utf8').digest('hex');
  });
  afterAll(async () => {
    await api?.close();
    await db?.drop();
  });

  /** Publishes, projects in random batches, then compares every answer; returns what differed. */
  async function check(spec: HistorySpec, arrival: number, batchSizes: number[]): Promise<void> {
    const tag = `h${String(++history).padStart(3, '0')}`;
    const events = expandHistory(spec, tag, hash);
    const shuffled = erasuresBeforeLaterEvents(shuffle(events, arrival), USERS, hash);
    // A batch ends at each erasure: an event dated after it in the same batch would be the live path's approximation.
    const erasureAt = shuffled.flatMap((e, i) => (e.type === 'customer.erased' ? [i] : []));
    const first = await appendToEventLog(
      db.dataSource,
      topic,
      shuffled.map((e) => ({ key: String(e.data.receiptId ?? ''), value: Buffer.from(JSON.stringify(e)) })),
    );
    let offset = BigInt(first);
    const end = offset + BigInt(shuffled.length);
    const apps = [...new Set(events.map((e) => e.appid))];
    for (let i = 0; offset < end; i++) {
      const at = Number(offset - BigInt(first));
      const nextErasure = erasureAt.find((p) => p >= at);
      const size = Math.min(batchSizes.length ? batchSizes[i % batchSizes.length] : 1000, nextErasure === undefined ? Infinity : nextErasure - at + 1);
      const messages = await readEventLog(db.dataSource, topic, 0, offset.toString(), Math.min(size, Number(end - offset)));
      const outcome = await applyBatch(db.dataSource, { topic, partition: 0, messages });
      if (outcome.kind !== 'applied') throw new Error(`batch at ${offset} refused: ${JSON.stringify(outcome)}`);
      if (outcome.deadLetters.length > 0) throw new Error(`generated event dead-lettered: ${outcome.deadLetters[0].reason}`);
      offset = BigInt(outcome.nextOffset);
    }

    const model = new ReferenceModel(shuffled, hash);
    const appOf = (d: DefinitionsSpec) => `${tag}-app${d.app}`;
    for (const d of spec.definitions ?? []) for (const { name, products } of d.initial) await define(model, appOf(d), name, products);
    await compare(model, apps, true);
    await compareEntitlements(model, apps);

    const verify = await runCli(['rebuild', '--verify'], { DATABASE_URL: db.url, KAFKA_TOPIC: topic, LOG_LEVEL: 'error' });
    expect({ code: verify.code, out: verify.stdout + verify.stderr }).toMatchObject({ code: 0 });
    // from the log alone (the fold, not the live path): every instant again; the filter combinations once
    const rebuilt = await runCli(['rebuild'], { DATABASE_URL: db.url, KAFKA_TOPIC: topic, LOG_LEVEL: 'error' });
    expect({ code: rebuilt.code, out: rebuilt.stdout + rebuilt.stderr }).toMatchObject({ code: 0 });
    await compare(model, apps, false);

    // the definitions change: the same stored history read under the new ones, at every instant
    for (const d of spec.definitions ?? []) for (const { name, products } of d.changes) await define(model, appOf(d), name, products);
    await compareEntitlements(model, [...new Set([...apps, ...(spec.definitions ?? []).map(appOf)])]);
  }

  /** PUT (products) or DELETE (null) one entitlement through the API, and the same in the model. */
  async function define(model: ReferenceModel, app: string, name: string, products: string[] | null): Promise<void> {
    const url = `${api.baseUrl}/v2/entitlements/${encodeURIComponent(name)}`;
    const authorization = `Bearer ${api.token(app, ['entitlements:write'])}`;
    if (products === null) {
      const response = await fetch(url, { method: 'DELETE', headers: { authorization } });
      expect({ name, status: response.status }).toEqual({ name, status: model.undefine(app, name) ? 204 : 404 });
      return;
    }
    const response = await fetch(url, {
      method: 'PUT',
      headers: { authorization, 'content-type': 'application/json' },
      body: JSON.stringify({ productIds: products }),
    });
    expect({ name, status: response.status }).toEqual({ name, status: 200 });
    model.define(app, name, products);
  }

  /** The customers answers (whole, a page, named) at the fixed instants and where entitlement entries may change (1 ms either side). */
  async function compareEntitlements(model: ReferenceModel, apps: string[]): Promise<void> {
    const ends = [...new Set(apps.flatMap((app) => model.entitlementInstants(app)).map((d) => d.getTime()))]
      .slice(0, 8)
      .flatMap((t) => [-1, 0, 1].map((m) => new Date(t + m)));
    for (const app of apps) expect(await readBody(`/v2/entitlements`, app)).toEqual(model.entitlementDefinitions(app));
    for (const now of [...NOW_INSTANTS, ...ends]) {
      clock.at = now;
      for (const app of apps) {
        expect({ now, body: await readBody('/v2/customers?limit=1000', app) }).toEqual({ now, body: model.customersPage(app, { skip: 0, limit: 1000 }, now) });
        expect(await readBody('/v2/customers?skip=1&limit=2', app)).toEqual(model.customersPage(app, { skip: 1, limit: 2 }, now));
        const names = model.customerNames(app).slice(0, 3);
        expect(await readBody(`/v2/customers?applicationUsername=${[...names, 'nobody'].join(',')}`, app)).toEqual(
          model.customersPage(app, { usernames: [...names, 'nobody'] }, now),
        );
      }
    }
  }

  async function readBody(path: string, app: string): Promise<unknown> {
    const res = await api.get(path, api.token(app));
    expect({ path, status: res.status }).toEqual({ path, status: 200 });
    return res.body;
  }

  /** Every answer of both endpoints against the model, at the fixed instants and the status changes; `all`: every filter combination too. */
  async function compare(model: ReferenceModel, apps: string[], all: boolean): Promise<void> {
    // the fixed instants, and the instants a status changes (access ends, grace starts) with 1 ms either side
    const boundaries = [...new Set(apps.flatMap((app) => model.statusInstants(app)).map((d) => d.getTime()))]
      .slice(0, 8)
      .flatMap((t) => [-1, 0, 1].map((m) => new Date(t + m)));
    const fixed = new Set(NOW_INSTANTS);
    for (const now of [...NOW_INSTANTS, ...boundaries]) {
      clock.at = now;
      for (const app of apps) {
        const token = api.token(app);
        const get = async (path: string) => {
          const res = await api.get(path, token);
          expect(res.status).toBe(200);
          return res.body;
        };
        expect(await get('/v2/customers?limit=1000')).toEqual(model.customersPage(app, { skip: 0, limit: 1000 }, now));
        expect(await get('/v2/customers?skip=1&limit=2')).toEqual(model.customersPage(app, { skip: 1, limit: 2 }, now));
        const names = model.customerNames(app).slice(0, 3);
        expect(await get(`/v2/customers?applicationUsername=${[...names, 'nobody'].join(',')}`)).toEqual(
          model.customersPage(app, { usernames: [...names, 'nobody'] }, now),
        );
        // issue 24: every combination of the customer filters, and each status's exact count
        const products = model.transactionValues(app).productIds;
        // at a status boundary: each status alone, and every filter at once
        for (let mask = 1; mask < 32; mask++) {
          if ((!fixed.has(now) || !all) && mask !== 31) continue;
          const f = customerFilters(mask, now, products);
          expect({ mask, body: await get(`/v2/customers?${customerQuery(f)}&limit=1000`) }).toEqual({
            mask,
            body: model.customersPage(app, { ...f, skip: 0, limit: 1000 }, now),
          });
          if (mask % 8 === 1)
            expect(await get(`/v2/customers?${customerQuery(f)}&skip=1&limit=2`)).toEqual(model.customersPage(app, { ...f, skip: 1, limit: 2 }, now));
        }
        for (const status of STATUSES) {
          const whole = model.customersPage(app, { status: [status], skip: 0, limit: 1000 }, now);
          expect(await get(`/v2/customers?status=${status}&limit=1000`)).toEqual(whole);
          const middle = Math.floor(whole.paging.total / 2);
          expect({ status, middle, body: await get(`/v2/customers?status=${status}&skip=${middle}&limit=2`) }).toEqual({
            status,
            middle,
            body: model.customersPage(app, { status: [status], skip: middle, limit: 2 }, now),
          });
        }
        // the expiry bounds alone (customer_end_weeks): pages from the middle, with bounds on the instant
        // asked, which at the status boundaries is an access end, a millisecond either side of one
        for (const bounds of [{ expiresAfter: now.toISOString() }, { expiresBefore: now.toISOString() }, customerFilters(24, now, products)]) {
          const all = model.customersPage(app, { ...bounds, skip: 0, limit: 1000 }, now);
          expect({ bounds, body: await get(`/v2/customers?${customerQuery(bounds)}&limit=1000`) }).toEqual({ bounds, body: all });
          const middle = Math.floor(all.paging.total / 2);
          expect({ bounds, middle, body: await get(`/v2/customers?${customerQuery(bounds)}&skip=${middle}&limit=3`) }).toEqual({
            bounds,
            middle,
            body: model.customersPage(app, { ...bounds, skip: middle, limit: 3 }, now),
          });
        }
        // status, intent and product together (no expiry bound): a page from the middle of the matches
        const placed = customerFilters(7, now, products);
        const matches = model.customersPage(app, { ...placed, skip: 0, limit: 1000 }, now).paging.total;
        const skip = Math.floor(matches / 2);
        expect({ skip, body: await get(`/v2/customers?${customerQuery(placed)}&skip=${skip}&limit=3`) }).toEqual({
          skip,
          body: model.customersPage(app, { ...placed, skip, limit: 3 }, now),
        });
        if (names.length > 0)
          expect(await get(`/v2/customers?applicationUsername=${names.join(',')}&status=active,expired`)).toEqual(
            model.customersPage(app, { usernames: names, status: ['active', 'expired'] }, now),
          );
      }
    }
    for (const app of apps) {
      const token = api.token(app);
      const get = async (path: string) => (await api.get(path, token)).body;
      expect(await get('/v2/transactions?limit=1000')).toEqual(model.transactionsPage(app, { skip: 0, limit: 1000 }));
      expect(await get('/v2/transactions?skip=2&limit=3')).toEqual(model.transactionsPage(app, { skip: 2, limit: 3 }));
      for (const [startdate, enddate] of [
        ['2010-02-01T00:00:00.000Z', '2010-06-01T00:00:00.000Z'],
        ['2010-03-15T12:00:00.000Z', '2011-01-01T00:00:00.000Z'],
        ['2011-01-01T00:00:00.000Z', '2013-01-01T00:00:00.000Z'],
      ]) {
        expect(await get(`/v2/transactions?startdate=${startdate}&enddate=${enddate}&limit=1000`)).toEqual(
          model.transactionsPage(app, { startdate, enddate, skip: 0, limit: 1000 }),
        );
      }
      // issue 24: every combination of the transaction filters, with and without a date range
      const values = model.transactionValues(app);
      for (let mask = 1; mask < 32; mask++) {
        if (!all && mask !== 31) continue;
        const f = transactionFilters(mask, values);
        // ranges cut inside a day at either end, or at both (the kept counts are per day)
        const range: { startdate?: string; enddate?: string } =
          mask % 2 === 1
            ? {}
            : mask & 2
              ? { startdate: '2010-03-15T12:00:00.000Z', enddate: '2012-01-01T00:00:00.000Z' }
              : { startdate: '2010-02-01T00:00:00.000Z', enddate: '2011-07-01T06:30:00.000Z' };
        const qs = new URLSearchParams([...Object.entries({ ...f, ...range }).map(([k, v]): [string, string] => [k, String(v)]), ['limit', '1000']]);
        const whole = model.transactionsPage(app, { ...f, ...range, skip: 0, limit: 1000 });
        expect({ mask, body: await get(`/v2/transactions?${qs}`) }).toEqual({ mask, body: whole });
        // a page inside the matches: where it starts comes from the counts, not from an OFFSET over all of them
        const middle = Math.floor(whole.paging.total / 2);
        qs.set('skip', String(middle));
        qs.set('limit', '3');
        expect({ mask, middle, body: await get(`/v2/transactions?${qs}`) }).toEqual({
          mask,
          middle,
          body: model.transactionsPage(app, { ...f, ...range, skip: middle, limit: 3 }),
        });
        // a range cut between two rows of one day at each end: the rows the filter would not keep must not be subtracted
        const cut = cutBetweenRowsOfADay(values.dates);
        if (cut) {
          const cutQs = new URLSearchParams([...Object.entries({ ...f, ...cut }).map(([k, v]): [string, string] => [k, String(v)]), ['limit', '1000']]);
          expect({ mask, cut, body: await get(`/v2/transactions?${cutQs}`) }).toEqual({
            mask,
            cut,
            body: model.transactionsPage(app, { ...f, ...cut, skip: 0, limit: 1000 }),
          });
        }
      }
      // ids as support staff paste them, without the store's prefix
      for (const id of [...values.transactionIds.slice(0, 3), ...values.purchaseIds.slice(0, 2)]) {
        const bare = id.slice(id.indexOf(':') + 1);
        for (const name of ['transactionId', 'purchaseId'] as const) {
          const qs = new URLSearchParams({ [name]: bare, limit: '1000' });
          expect({ bare, body: await get(`/v2/transactions?${qs}`) }).toEqual({
            bare,
            body: model.transactionsPage(app, { [name]: bare, skip: 0, limit: 1000 }),
          });
        }
      }
    }
  }

  it.each(REGRESSION_HISTORIES.map((r) => [r.name, r] as const))('regression: %s', async (_, r) => {
    await check(r.spec, r.arrival, r.batchSizes);
  });

  it(`generated histories (${RUNS} runs)`, async () => {
    await fc.assert(
      fc.asyncProperty(historyArbitrary, fc.integer(), fc.array(fc.integer({ min: 1, max: 9 }), { maxLength: 5 }), (spec, arrival, sizes) =>
        check(spec, arrival, sizes),
      ),
      { numRuns: RUNS, seed: SEED, endOnFailure: true },
    );
  });
});

const STATUSES: CustomerStatus[] = ['active', 'grace_period', 'billing_retry', 'expired', 'none'];

/**
 * startdate at a row that has an earlier row on its UTC day, enddate at the last such row: both
 * ends cut a day with rows on either side (undefined when no day holds two rows).
 */
function cutBetweenRowsOfADay(dates: number[]): { startdate: string; enddate: string } | undefined {
  const day = (t: number) => new Date(t).toISOString().slice(0, 10);
  const inside = dates.filter((t, i) => i > 0 && t > dates[i - 1] && day(t) === day(dates[i - 1]));
  if (inside.length === 0) return undefined;
  const [start, end] = [inside[0], inside[inside.length - 1]];
  return { startdate: new Date(start).toISOString(), enddate: new Date(end === start ? end + 1 : end).toISOString() };
}

/** The customer filters the bits of `mask` turn on, with values that vary with it. */
function customerFilters(mask: number, now: Date, products: string[]): CustomerFilters {
  const f: CustomerFilters = {};
  if (mask & 1) f.status = [STATUSES[mask % 5], STATUSES[(mask + 2) % 5]];
  if (mask & 2) f.renewalIntent = mask & 8 ? 'Renew' : 'Lapse';
  if (mask & 4) f.productId = products[mask % Math.max(products.length, 1)] ?? 'apple:monthly';
  if (mask & 8) f.expiresAfter = new Date(now.getTime() - 30 * 86_400_000).toISOString();
  if (mask & 16) f.expiresBefore = new Date(now.getTime() + 60 * 86_400_000).toISOString();
  return f;
}

function customerQuery(f: CustomerFilters): string {
  return new URLSearchParams(Object.entries(f).map(([k, v]): [string, string] => [k, Array.isArray(v) ? v.join(',') : String(v)])).toString();
}

function transactionFilters(mask: number, v: { transactionIds: string[]; purchaseIds: string[]; productIds: string[] }): TransactionFilters {
  const pick = <T>(list: T[], i: number) => list[i % list.length];
  const f: TransactionFilters = {};
  if (v.transactionIds.length === 0) return f;
  if (mask & 1) f.transactionId = pick(v.transactionIds, mask);
  if (mask & 2) f.purchaseId = mask & 1 ? pick(v.purchaseIds, mask) : pick(v.transactionIds, mask + 3);
  if (mask & 4) f.productId = pick(v.productIds, mask);
  if (mask & 8) f.platform = mask & 4 ? 'google' : 'apple';
  if (mask & 16) f.sandbox = (mask & 2) === 0;
  return f;
}

/** A deterministic shuffle (Fisher-Yates over a small LCG), so a failing arrival order replays; 0 keeps the order. */
function shuffle<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  if (seed === 0) return out;
  let s = seed >>> 0 || 1;
  for (let i = out.length - 1; i > 0; i--) {
    s = (Math.imul(s, 1_664_525) + 1_013_904_223) >>> 0;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

export type { RawEvent };
