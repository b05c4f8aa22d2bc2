import { jest } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { embeddedLogCaughtUp } from '../utils/events.js';
import { runCli } from '../utils/processes.js';
import Stripe from 'stripe';
import { startStripeMock, stripeFixture } from '../utils/stripe-mock.js';

jest.setTimeout(180_000);

// `import stripe` as an operator runs it (the built CLI, a child process) against a loopback Stripe
// API answering Stripe's own fixtures, into the embedded log a running service projects.
const API_KEY = 'rk_test_import0123456789';
const DAY = 86_400;
const now = () => Math.floor(Date.now() / 1000);
const id = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;
type Json = Record<string, any>;

describe('import stripe (e2e: CLI process, real PostgreSQL, embedded log, Stripe API mock)', () => {
  let db: TestDatabase;
  let api: TestApp;
  let mock: Awaited<ReturnType<typeof startStripeMock>>;
  let env: Record<string, string>;

  beforeAll(async () => {
    mock = await startStripeMock(API_KEY);
    db = await createTestDatabase('stripe_import');
    env = { DATABASE_URL: db.url, STRIPE_APPS: `app-s:whsec_import0123456789:${API_KEY}`, STRIPE_API_BASE_URL: mock.base, IMPORT_CONCURRENCY: '2' };
    api = await startTestApp({ databaseUrl: db.url, env: { CONSUMER_ENABLED: 'true', STRIPE_APPS: env.STRIPE_APPS, STRIPE_API_BASE_URL: mock.base } });
  });
  afterAll(async () => {
    await api?.close();
    await db?.drop();
    await mock?.close();
  });

  const logSize = async () => Number((await db.dataSource.query(`SELECT count(*)::int AS n FROM public.event_log`))[0].n);

  /** A monthly subscription started `months` periods ago, every period's invoice paid, its latest period current. */
  function history(user: string, months: number, status = 'active'): { sub: Json; invoices: Json[] } {
    const subId = id('sub');
    const start = now() - months * 30 * DAY + DAY;
    const invoices = Array.from({ length: months }, (_, i) => {
      const inv = stripeFixture('invoice');
      const periodStart = start + i * 30 * DAY;
      inv.lines.data[0].period = { start: periodStart, end: periodStart + 30 * DAY };
      inv.lines.data[0].pricing = { type: 'price_details', price_details: { price: 'price_monthly', product: 'prod_pro' }, unit_amount_decimal: '999' };
      return Object.assign(inv, {
        id: id('in'),
        status: 'paid',
        amount_paid: 999,
        currency: 'usd',
        livemode: false,
        billing_reason: i === 0 ? 'subscription_create' : 'subscription_cycle',
        status_transitions: { ...inv.status_transitions, paid_at: periodStart + 60 },
        parent: { quote_details: null, subscription_details: { metadata: null, subscription: subId }, type: 'subscription_details' },
      });
    });
    const sub = stripeFixture('subscription');
    const last = invoices.at(-1)!;
    Object.assign(sub.items.data[0], { current_period_start: last.lines.data[0].period.start, current_period_end: last.lines.data[0].period.end, quantity: 1 });
    Object.assign(sub.items.data[0].price, { id: 'price_monthly', currency: 'usd', unit_amount: 999 });
    delete sub.current_period_start;
    delete sub.current_period_end;
    Object.assign(sub, {
      id: subId,
      status,
      livemode: false,
      created: start,
      start_date: start,
      trial_start: null,
      trial_end: null,
      cancel_at_period_end: false,
      cancel_at: null,
      canceled_at: null,
      ended_at: null,
      latest_invoice: last.id,
      metadata: { applicationUsername: user },
    });
    return { sub, invoices };
  }

  it('imports every subscription with its paid invoices, through pages and a rate limit; a second run publishes nothing', async () => {
    const histories = [history('ann@example.com', 3), history('ben@example.com', 1), ...Array.from({ length: 120 }, (_, i) => history(`bulk-${i}`, 1))];
    for (const h of histories) {
      for (const inv of h.invoices) mock.setInvoice(inv);
      mock.setSubscription(h.sub);
    }
    mock.rateLimitNext(2);
    const first = await runCli(['import', 'stripe', '--app', 'app-s'], env);
    expect({ code: first.code, stderr: first.stderr }).toMatchObject({
      code: 0,
      stderr: expect.stringMatching(/imported 122 line\(s\) \(\d+ event\(s\)\), unchanged 0/),
    });
    await embeddedLogCaughtUp(db.dataSource);
    const token = api.token('app-s');
    const ann = (await api.get('/v2/customers?applicationUsername=ann@example.com', token)).body.rows[0];
    const [annSub, annInvoices] = [histories[0].sub, histories[0].invoices];
    expect(ann).toMatchObject({
      receiptIds: [`stripe:${annSub.id}`],
      customerInfo: { activeSubscriber: true, renewalIntent: 'Renew', expirationDate: new Date(annInvoices[2].lines.data[0].period.end * 1000).toISOString() },
    });
    const rows = (await api.get(`/v2/transactions?purchaseId=stripe:${annSub.id}`, token)).body.rows as Json[];
    expect(rows.map((r) => r.transactionId).sort()).toEqual(annInvoices.map((i) => `stripe:${i.id}`).sort());
    expect(rows.every((r) => r.platform === 'stripe' && r.amountMicros === 9_990_000 && r.productId === 'stripe:price_monthly')).toBe(true);
    expect((await api.get('/v2/customers?limit=0', token)).body.paging.total).toBe(122);

    const [events, calls] = [await logSize(), mock.calls.length];
    const again = await runCli(['import', 'stripe', '--app', 'app-s'], env);
    expect({ code: again.code, stderr: again.stderr }).toMatchObject({
      code: 0,
      stderr: expect.stringMatching(/imported 0 line\(s\) \(0 event\(s\)\), unchanged 122/),
    });
    expect(await logSize()).toBe(events);
    // only the listing is asked again: no subscription or invoice is read for what was done
    expect(mock.calls.slice(calls).every((c) => c === 'GET /v1/subscriptions')).toBe(true);
  });

  it('a refund the webhook recorded stays revoked when an import (which cannot see refunds) publishes the subscription again', async () => {
    const h = history('refunded@example.com', 2);
    for (const inv of h.invoices) mock.setInvoice(inv);
    mock.setSubscription(h.sub);
    expect((await runCli(['import', 'stripe', '--app', 'app-s', '--since', '2000-01-01'], env)).code).toBe(0);
    await embeddedLogCaughtUp(db.dataSource);
    const latest = h.invoices.at(-1)!;
    const payment = id('pi');
    mock.setInvoicePayment(payment, latest.id);
    const refund = Object.assign(stripeFixture('event'), {
      id: id('evt'),
      type: 'charge.refunded',
      created: now(),
      data: {
        object: Object.assign(stripeFixture('charge'), { id: id('ch'), payment_intent: payment, invoice: undefined, refunded: true, amount_refunded: 999 }),
      },
    });
    const payload = JSON.stringify(refund);
    const res = await fetch(`${api.baseUrl}/v2/notifications/stripe/app-s`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'stripe-signature': new Stripe(API_KEY).webhooks.generateTestHeaderString({ payload, secret: 'whsec_import0123456789' }),
      },
      body: payload,
    });
    expect(res.status).toBe(200);
    await embeddedLogCaughtUp(db.dataSource);
    const revoked = async () =>
      ((await api.get(`/v2/transactions?transactionId=stripe:${latest.id}`, api.token('app-s'))).body.rows as Json[]).find(
        (r) => r.transactionId === `stripe:${latest.id}`,
      );
    expect(await revoked()).toMatchObject({ revocationDate: new Date(refund.created * 1000).toISOString() });
    // another window: the same subscription is read and published again
    expect((await runCli(['import', 'stripe', '--app', 'app-s', '--since', '2000-01-02'], env)).code).toBe(0);
    await embeddedLogCaughtUp(db.dataSource);
    expect(await revoked()).toMatchObject({ revocationDate: new Date(refund.created * 1000).toISOString(), isExpired: true });
  });

  it('refuses an application without Stripe settings and a key Stripe refuses, naming the setting', async () => {
    const unknown = await runCli(['import', 'stripe', '--app', 'nope'], env);
    expect({ code: unknown.code, stderr: unknown.stderr }).toMatchObject({ code: 2, stderr: expect.stringContaining('is not in STRIPE_APPS') });
    const badKey = await runCli(['import', 'stripe', '--app', 'app-s', '--since', '2020-01-01'], {
      ...env,
      STRIPE_APPS: 'app-s:whsec_import0123456789:rk_test_wrongkey000',
    });
    expect(badKey.code).toBe(1);
    expect(badKey.stderr).toContain('STRIPE_APPS');
  });
});
