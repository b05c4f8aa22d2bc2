import { jest } from '@jest/globals';
import { randomBytes, randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import Stripe from 'stripe';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { embeddedLogCaughtUp } from '../utils/events.js';
import { startStripeMock, stripeFixture } from '../utils/stripe-mock.js';
import { ReferenceModel, type RawEvent } from '../model/reference-model.js';
import { expectEqualsFromScratch } from '../utils/read-models.js';

jest.setTimeout(120_000);

// Stripe webhooks in (docs/events/stripe.md), over HTTP, on a real PostgreSQL and the embedded log,
// the Stripe API a loopback mock. Objects and events are Stripe's own examples (stripe/openapi
// fixtures3.json) with the fields of each scenario set; signatures are made by Stripe's library.
const SECRET = 'whsec_test0123456789abcdef';
const OTHER_SECRET = 'whsec_other0123456789abcdef';
const API_KEY = 'rk_test_0123456789abcdef';
const DAY = 86_400;
const stripe = new Stripe(API_KEY);
const now = () => Math.floor(Date.now() / 1000);
const id = (prefix: string) => `${prefix}_${randomBytes(12).toString('base64url').replace(/[-_]/g, 'x')}`;

type Json = Record<string, any>;

/** A Subscription as the API (2025-03-31 and later) answers it: periods on the item. */
function subscription(o: { id: string; status: string; start: number; periodStart: number; periodEnd: number; latestInvoice: string } & Json): Json {
  const { id: subId, status, start, periodStart, periodEnd, latestInvoice, user, ...rest } = o;
  const s = stripeFixture('subscription');
  const item = s.items.data[0];
  Object.assign(item, { current_period_start: periodStart, current_period_end: periodEnd, subscription: subId, quantity: 1 });
  Object.assign(item.price, { id: 'price_pro_monthly', currency: 'usd', unit_amount: 999 });
  delete s.current_period_start;
  delete s.current_period_end;
  return Object.assign(s, {
    id: subId,
    status,
    livemode: false,
    start_date: start,
    created: start,
    trial_start: null,
    trial_end: null,
    cancel_at_period_end: false,
    cancel_at: null,
    canceled_at: null,
    ended_at: null,
    cancellation_details: { comment: null, feedback: null, reason: null },
    latest_invoice: latestInvoice,
    metadata: user ? { applicationUsername: user } : {},
    ...rest,
  });
}

/** An Invoice of a subscription, paid (or not) at `paidAt`. */
function invoice(o: { id: string; subscription: string; paid: boolean; amount: number; paidAt?: number; reason: string }): Json {
  const i = stripeFixture('invoice');
  return Object.assign(i, {
    id: o.id,
    status: o.paid ? 'paid' : 'open',
    amount_paid: o.paid ? o.amount : 0,
    amount_due: o.amount,
    currency: 'usd',
    billing_reason: o.reason,
    status_transitions: { ...i.status_transitions, paid_at: o.paid ? (o.paidAt ?? now()) : null },
    parent: { quote_details: null, subscription_details: { metadata: null, subscription: o.subscription }, type: 'subscription_details' },
  });
}

/** A webhook Event around an object. */
function event(type: string, object: Json): Json {
  return Object.assign(stripeFixture('event'), { id: id('evt'), type, created: now(), api_version: '2026-10-28.endive', data: { object } });
}

describe('Stripe webhooks in (e2e: real PostgreSQL, embedded log, Stripe API mock)', () => {
  let db: TestDatabase;
  let api: TestApp;
  let mock: Awaited<ReturnType<typeof startStripeMock>>;
  let token: string;

  beforeAll(async () => {
    mock = await startStripeMock(API_KEY);
    db = await createTestDatabase('stripe');
    api = await startTestApp({
      databaseUrl: db.url,
      env: { CONSUMER_ENABLED: 'true', STRIPE_APPS: `app-s:${SECRET}:${API_KEY},app-t:${OTHER_SECRET}:${API_KEY}`, STRIPE_API_BASE_URL: mock.base },
    });
    token = api.token('app-s');
  });
  afterAll(async () => {
    await api?.close();
    await db?.drop();
    await mock?.close();
  });

  const logSize = async () => Number((await db.dataSource.query(`SELECT count(*)::int AS n FROM public.event_log`))[0].n);
  async function deliver(e: Json, o: { app?: string; secret?: string; timestamp?: number; raw?: string; header?: string | null } = {}) {
    const payload = o.raw ?? JSON.stringify(e);
    const header =
      o.header === null ? undefined : (o.header ?? stripe.webhooks.generateTestHeaderString({ payload, secret: o.secret ?? SECRET, timestamp: o.timestamp }));
    const res = await fetch(`${api.baseUrl}/v2/notifications/stripe/${o.app ?? 'app-s'}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(header ? { 'stripe-signature': header } : {}) },
      body: payload,
    });
    return { status: res.status, body: (await res.json()) as Json };
  }
  const customer = async (user: string) => (await api.get(`/v2/customers?applicationUsername=${encodeURIComponent(user)}`, token)).body.rows[0];
  const transactions = async (sub: string) => (await api.get(`/v2/transactions?purchaseId=stripe:${sub}`, token)).body.rows as Json[];
  const send = async (e: Json) => {
    const res = await deliver(e);
    expect(res).toMatchObject({ status: 200, body: { status: 'published' } });
    await embeddedLogCaughtUp(db.dataSource);
  };

  it('a trial, then paid: active through the trial, then through the paid period; each invoice is a transaction at its charge date', async () => {
    const user = `web-${randomUUID()}@example.com`;
    const subId = id('sub');
    const start = now() - 14 * DAY;
    const trialInvoice = invoice({ id: id('in'), subscription: subId, paid: true, amount: 0, paidAt: start, reason: 'subscription_create' });
    const trialing = subscription({
      id: subId,
      status: 'trialing',
      start,
      periodStart: start,
      periodEnd: start + 14 * DAY + 60,
      latestInvoice: trialInvoice.id,
      trial_start: start,
      trial_end: start + 14 * DAY + 60,
      user,
    });
    mock.setInvoice(trialInvoice);
    mock.setSubscription(trialing);
    await send(event('customer.subscription.created', trialing));
    expect(await customer(user)).toMatchObject({
      customerInfo: { activeSubscriber: true, renewalIntent: 'Renew', expirationDate: new Date((start + 14 * DAY + 60) * 1000).toISOString() },
      receiptIds: [`stripe:${subId}`],
    });
    expect(await transactions(subId)).toEqual([
      expect.objectContaining({
        transactionId: `stripe:${trialInvoice.id}`,
        platform: 'stripe',
        productId: 'stripe:price_pro_monthly',
        isTrialPeriod: true,
        sandbox: true,
        amountMicros: 0,
        currency: 'USD',
      }),
    ]);

    // The trial converts: the renewal invoice is paid, the subscription active for the new period.
    const periodStart = start + 14 * DAY + 60;
    const paid = invoice({ id: id('in'), subscription: subId, paid: true, amount: 999, paidAt: periodStart + 5, reason: 'subscription_cycle' });
    const active = subscription({
      id: subId,
      status: 'active',
      start,
      periodStart,
      periodEnd: periodStart + 30 * DAY,
      latestInvoice: paid.id,
      trial_start: start,
      trial_end: periodStart,
      user,
    });
    mock.setInvoice(paid);
    mock.setSubscription(active);
    await send(event('invoice.paid', paid));
    expect((await customer(user)).customerInfo).toEqual({
      activeSubscriber: true,
      renewalIntent: 'Renew',
      expirationDate: new Date((periodStart + 30 * DAY) * 1000).toISOString(),
      lastPurchaseDate: new Date((periodStart + 5) * 1000).toISOString(),
      lastRenewalDate: new Date((periodStart + 5) * 1000).toISOString(),
    });
    expect(await transactions(subId)).toContainEqual(
      expect.objectContaining({
        transactionId: `stripe:${paid.id}`,
        isTrialPeriod: false,
        amountMicros: 9_990_000,
        currency: 'USD',
        lastRenewalDate: new Date((periodStart + 5) * 1000).toISOString(),
      }),
    );
  });

  it('a failed renewal is billing retry (no access beyond the paid period), then recovered; a cancellation at period end keeps access and says Lapse', async () => {
    const user = `retry-${randomUUID()}`;
    const subId = id('sub');
    const start = now() - 40 * DAY;
    const periodStart = now() - 2 * DAY;
    const open = invoice({ id: id('in'), subscription: subId, paid: false, amount: 999, reason: 'subscription_cycle' });
    const pastDue = subscription({ id: subId, status: 'past_due', start, periodStart, periodEnd: periodStart + 30 * DAY, latestInvoice: open.id, user });
    mock.setInvoice(open);
    mock.setSubscription(pastDue);
    await send(event('invoice.payment_failed', open));
    expect(await customer(user)).toMatchObject({ customerInfo: { activeSubscriber: false, expirationDate: new Date(periodStart * 1000).toISOString() } });
    expect((await api.get(`/v2/customers?status=billing_retry&applicationUsername=${user}`, token)).body.paging.total).toBe(1);

    const recovered = { ...open, status: 'paid', amount_paid: 999, status_transitions: { ...open.status_transitions, paid_at: now() } };
    mock.setInvoice(recovered);
    mock.setSubscription({ ...pastDue, status: 'active' });
    await send(event('invoice.paid', recovered));
    expect((await customer(user)).customerInfo).toMatchObject({
      activeSubscriber: true,
      renewalIntent: 'Renew',
      expirationDate: new Date((periodStart + 30 * DAY) * 1000).toISOString(),
    });

    const canceling = {
      ...pastDue,
      status: 'active',
      cancel_at_period_end: true,
      canceled_at: now(),
      cancellation_details: { reason: 'cancellation_requested' },
    };
    mock.setSubscription(canceling);
    await send(event('customer.subscription.updated', canceling));
    expect((await customer(user)).customerInfo).toMatchObject({ activeSubscriber: true, renewalIntent: 'Lapse' });
  });

  it('an immediate cancellation ends access; events delivered twice and out of order publish the state Stripe holds now', async () => {
    const user = `gone-${randomUUID()}`;
    const subId = id('sub');
    const start = now() - 10 * DAY;
    const paid = invoice({ id: id('in'), subscription: subId, paid: true, amount: 999, paidAt: start, reason: 'subscription_create' });
    const active = subscription({ id: subId, status: 'active', start, periodStart: start, periodEnd: start + 30 * DAY, latestInvoice: paid.id, user });
    mock.setInvoice(paid);
    mock.setSubscription(active);
    const created = event('customer.subscription.created', active);
    await send(created);
    const ended = now() - 60;
    const canceled = { ...active, status: 'canceled', canceled_at: ended, ended_at: ended, cancellation_details: { reason: 'cancellation_requested' } };
    mock.setSubscription(canceled);
    await send(event('customer.subscription.deleted', canceled));
    const after = await customer(user);
    expect(after.customerInfo).toMatchObject({ activeSubscriber: false, renewalIntent: 'Lapse', expirationDate: new Date(ended * 1000).toISOString() });
    expect(await transactions(subId)).toEqual([expect.objectContaining({ cancelationReason: 'Customer', isExpired: true })]);
    // The creation again, late: Stripe now holds the canceled state, which is what is published (the same state: the same event id).
    await send(created);
    expect(await customer(user)).toEqual(after);
  });

  it('a full refund revokes the paid invoice; a partial one revokes nothing; a lost dispute ends access', async () => {
    const user = `refund-${randomUUID()}`;
    const subId = id('sub');
    const start = now() - 3 * DAY;
    const paid = invoice({ id: id('in'), subscription: subId, paid: true, amount: 999, paidAt: start, reason: 'subscription_create' });
    const active = subscription({ id: subId, status: 'active', start, periodStart: start, periodEnd: start + 30 * DAY, latestInvoice: paid.id, user });
    mock.setInvoice(paid);
    mock.setSubscription(active);
    await send(event('customer.subscription.created', active));
    const paymentIntent = id('pi');
    mock.setInvoicePayment(paymentIntent, paid.id);
    // A charge as API 2025-03-31 and later send it: no invoice, the PaymentIntent only.
    const charge = Object.assign(stripeFixture('charge'), {
      id: id('ch'),
      payment_intent: paymentIntent,
      amount: 999,
      amount_refunded: 300,
      refunded: false,
      currency: 'usd',
    });
    delete charge.invoice;
    const before = await logSize();
    expect(await deliver(event('charge.refunded', charge))).toMatchObject({ status: 200, body: { status: 'acknowledged', events: 0 } });
    expect(await logSize()).toBe(before);

    const full = event('charge.refunded', { ...charge, amount_refunded: 999, refunded: true });
    await send(full);
    expect(await customer(user)).toMatchObject({ customerInfo: { activeSubscriber: false, expirationDate: new Date(full.created * 1000).toISOString() } });
    expect(await transactions(subId)).toEqual([
      expect.objectContaining({
        transactionId: `stripe:${paid.id}`,
        revocationDate: new Date(full.created * 1000).toISOString(),
        cancelationReason: 'Customer',
        amountMicros: 9_990_000,
      }),
    ]);

    // Stripe then cancels the subscription at once: its state says canceled, not refunded; the revocation stays on the row.
    const canceled = { ...active, status: 'canceled', canceled_at: now(), ended_at: now(), cancellation_details: { reason: 'cancellation_requested' } };
    mock.setSubscription(canceled);
    await send(event('customer.subscription.deleted', canceled));
    expect(await transactions(subId)).toEqual([
      expect.objectContaining({ transactionId: `stripe:${paid.id}`, revocationDate: new Date(full.created * 1000).toISOString(), isExpired: true }),
    ]);
    expect((await customer(user)).customerInfo).toMatchObject({ activeSubscriber: false, renewalIntent: 'Lapse' });

    // A refund of an invoice the read models never held (before the endpoint existed): read from Stripe and revoked, not lost.
    const olderInvoice = invoice({ id: id('in'), subscription: subId, paid: true, amount: 999, paidAt: start - 30 * DAY, reason: 'subscription_cycle' });
    olderInvoice.lines.data[0].period = { start: start - 30 * DAY, end: start };
    mock.setInvoice(olderInvoice);
    const olderPayment = id('pi');
    mock.setInvoicePayment(olderPayment, olderInvoice.id);
    const olderRefund = event('charge.refunded', { ...charge, id: id('ch'), payment_intent: olderPayment, amount_refunded: 999, refunded: true });
    await send(olderRefund);
    expect(await transactions(subId)).toContainEqual(
      expect.objectContaining({ transactionId: `stripe:${olderInvoice.id}`, revocationDate: new Date(olderRefund.created * 1000).toISOString() }),
    );

    // A dispute names the charge; the charge names the PaymentIntent; invoice payments name the invoice.
    const disputed = `dispute-${randomUUID()}`;
    const sub2 = id('sub');
    const paid2 = invoice({ id: id('in'), subscription: sub2, paid: true, amount: 999, paidAt: start, reason: 'subscription_create' });
    const active2 = subscription({
      id: sub2,
      status: 'active',
      start,
      periodStart: start,
      periodEnd: start + 30 * DAY,
      latestInvoice: paid2.id,
      user: disputed,
    });
    mock.setInvoice(paid2);
    mock.setSubscription(active2);
    await send(event('customer.subscription.created', active2));
    const pi2 = id('pi');
    const charge2 = Object.assign(stripeFixture('charge'), { id: id('ch'), payment_intent: pi2, currency: 'usd' });
    mock.setCharge(charge2);
    mock.setInvoicePayment(pi2, paid2.id);
    const dispute = Object.assign(stripeFixture('dispute'), { id: id('dp'), charge: charge2.id, payment_intent: null, status: 'under_review' });
    expect(await deliver(event('charge.dispute.created', dispute))).toMatchObject({ status: 200, body: { status: 'acknowledged' } });
    await send(event('charge.dispute.closed', { ...dispute, status: 'lost' }));
    expect((await customer(disputed)).customerInfo).toMatchObject({ activeSubscriber: false });
  });

  it("Checkout: client_reference_id names the app's user; a one-time payment is a purchase of the session's price", async () => {
    const user = `checkout-${randomUUID()}`;
    const subId = id('sub');
    const start = now() - 60;
    const paid = invoice({ id: id('in'), subscription: subId, paid: true, amount: 999, paidAt: start, reason: 'subscription_create' });
    const active = subscription({ id: subId, status: 'active', start, periodStart: start, periodEnd: start + 30 * DAY, latestInvoice: paid.id });
    mock.setInvoice(paid);
    mock.setSubscription(active);
    const session = Object.assign(stripeFixture('checkout.session'), {
      id: id('cs'),
      mode: 'subscription',
      subscription: subId,
      client_reference_id: user,
      payment_status: 'paid',
      livemode: false,
      metadata: {},
    });
    await send(event('checkout.session.completed', session));
    expect(await customer(user)).toMatchObject({ receiptIds: [`stripe:${subId}`], customerInfo: { activeSubscriber: true } });

    const buyer = `lifetime-${randomUUID()}`;
    const payment = id('pi');
    const oneTime = Object.assign(stripeFixture('checkout.session'), {
      id: id('cs'),
      mode: 'payment',
      subscription: null,
      payment_intent: payment,
      payment_status: 'paid',
      client_reference_id: null,
      metadata: { applicationUsername: buyer },
      amount_total: 4900,
      currency: 'eur',
      created: now() - 30,
      livemode: false,
    });
    mock.setLineItems(oneTime.id, [Object.assign(stripeFixture('line_item'), { price: { ...stripeFixture('line_item').price, id: 'price_lifetime' } })]);
    await send(event('checkout.session.completed', oneTime));
    expect(await customer(buyer)).toMatchObject({ receiptIds: [`stripe:${payment}`], customerInfo: { activeSubscriber: false } });
    expect((await api.get(`/v2/transactions?purchaseId=stripe:${payment}`, token)).body.rows).toEqual([
      expect.objectContaining({ productId: 'stripe:price_lifetime', amountMicros: 49_000_000, currency: 'EUR', platform: 'stripe' }),
    ]);
  });

  it('refuses what Stripe did not sign for this endpoint, and stores nothing; other event types are acknowledged', async () => {
    const subId = id('sub');
    const e = event(
      'customer.subscription.updated',
      subscription({ id: subId, status: 'active', start: now(), periodStart: now(), periodEnd: now() + DAY, latestInvoice: id('in') }),
    );
    const before = await logSize();
    const refusals = [
      await deliver(e, { secret: OTHER_SECRET }),
      await deliver(e, { timestamp: now() - 3600 }),
      await deliver(e, { header: null }),
      await deliver(e, {
        raw: JSON.stringify({ ...e, type: 'customer.subscription.deleted' }),
        header: stripe.webhooks.generateTestHeaderString({ payload: JSON.stringify(e), secret: SECRET }),
      }),
    ];
    expect(refusals.map((r) => [r.status, r.body.code])).toEqual(Array(4).fill([400, 'notification_unverified']));
    expect(refusals[1].body.detail).toContain('STRIPE_WEBHOOK_TOLERANCE');
    expect(refusals[2].body.detail).toContain('no Stripe-Signature header');
    // another app's secret is another endpoint's
    expect((await deliver(e, { app: 'app-t' })).status).toBe(400);
    expect((await deliver(e, { app: 'app-nope' })).status).toBe(404);
    const huge = await deliver(e, { raw: JSON.stringify({ ...e, padding: 'x'.repeat(300_000) }) });
    expect(huge.status).toBe(413);
    // chunked (no Content-Length): cut while read, answered 413 (not a reset connection)
    const chunked = await new Promise<number>((resolve, reject) => {
      const url = new URL(`${api.baseUrl}/v2/notifications/stripe/app-s`);
      const req = httpRequest(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          headers: { 'content-type': 'application/json', 'stripe-signature': 't=1,v1=x' },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      for (let i = 0; i < 40; i++) req.write('x'.repeat(10_000));
      req.end();
    });
    expect(chunked).toBe(413);
    expect(await logSize()).toBe(before);
    expect(await deliver(event('customer.created', stripeFixture('checkout.session')))).toMatchObject({
      status: 200,
      body: { status: 'acknowledged', events: 0 },
    });
    // a subscription Stripe no longer has: nothing to publish; Stripe's API failing: 503, Stripe retries
    expect(await deliver(e)).toMatchObject({ status: 200, body: { status: 'acknowledged' } });
    mock.failNext(1);
    mock.setSubscription(e.data.object);
    expect(await deliver(e)).toMatchObject({ status: 503, body: { code: 'store_api_unavailable' } });
    expect(await logSize()).toBe(before);
  });

  // Last: it reads everything the tests before it published.
  it('the events are ordinary events: the reference model and a projection from scratch of the log agree with the read models', async () => {
    const rows = (await db.dataSource.query(`SELECT value FROM public.event_log ORDER BY "offset"`)) as { value: Buffer }[];
    const model = new ReferenceModel(rows.map((r) => JSON.parse(r.value.toString('utf8')) as RawEvent));
    const at = new Date();
    expect((await api.get('/v2/customers?limit=1000', token)).body).toEqual(model.customersPage('app-s', { skip: 0, limit: 1000 }, at));
    expect((await api.get('/v2/transactions?limit=1000', token)).body).toEqual(model.transactionsPage('app-s', { skip: 0, limit: 1000 }));
    await expectEqualsFromScratch(
      db.dataSource,
      rows.map((r) => r.value),
    );
  });
});
