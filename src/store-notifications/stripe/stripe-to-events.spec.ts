import { stripeAmountMicros, stripeCheckoutEvents, stripeSubscriptionEvents, type StripeSubscription } from './stripe-to-events.js';

const T = (iso: string) => Date.parse(iso) / 1000;
const AT = new Date('2026-11-28T12:00:00.000Z');
const MAPPING = { usernameKey: 'applicationUsername', gracePeriodMs: 0 };
const sub = (o: Partial<StripeSubscription>): StripeSubscription => ({
  id: 'sub_1',
  status: 'active',
  livemode: true,
  start_date: T('2026-09-01T00:00:00Z'),
  latest_invoice: { id: 'in_3', status: 'paid', amount_paid: 999, currency: 'usd', status_transitions: { paid_at: T('2026-11-01T00:00:00Z') } },
  metadata: {},
  items: {
    data: [
      {
        quantity: 1,
        current_period_start: T('2026-11-01T00:00:00Z'),
        current_period_end: T('2026-12-01T00:00:00Z'),
        price: { id: 'price_m', currency: 'usd', unit_amount: 999 },
      },
    ],
  },
  ...o,
});
const data = (s: StripeSubscription) => stripeSubscriptionEvents('app', 'm-1', s, AT, MAPPING)[0]?.data;

describe('Stripe onto the event contract', () => {
  it('amounts in millionths of the currency, by how many decimals Stripe gives it', () => {
    expect(stripeAmountMicros(999, 'usd')).toBe(9_990_000);
    expect(stripeAmountMicros(1200, 'JPY')).toBe(1_200_000_000);
    expect(stripeAmountMicros(1500, 'kwd')).toBe(1_500_000);
  });

  it('an active renewal: paid through the period, renewed at its start', () => {
    expect(data(sub({}))).toEqual({
      transactionId: 'stripe:in_3',
      purchaseId: 'stripe:sub_1',
      productId: 'stripe:price_m',
      platform: 'stripe',
      receiptId: 'stripe:sub_1',
      sandbox: false,
      purchaseDate: '2026-09-01T00:00:00.000Z',
      lastRenewalDate: '2026-11-01T00:00:00.000Z',
      expirationDate: '2026-12-01T00:00:00.000Z',
      renewalIntent: 'Renew',
      isBillingRetryPeriod: false,
      isTrialPeriod: false,
      quantity: 1,
      amountMicros: 9_990_000,
      currency: 'USD',
    });
  });

  it('each status onto access: trial end, paid-through start in retry, ended, pending', () => {
    expect(
      data(
        sub({
          status: 'trialing',
          trial_end: T('2026-11-15T00:00:00Z'),
          latest_invoice: { id: 'in_t', status: 'paid', amount_paid: 0, currency: 'usd', status_transitions: { paid_at: T('2026-11-01T00:00:00Z') } },
        }),
      ),
    ).toMatchObject({
      isTrialPeriod: true,
      expirationDate: '2026-11-15T00:00:00.000Z',
      amountMicros: 0,
    });
    expect(data(sub({ status: 'past_due' }))).toMatchObject({ isBillingRetryPeriod: true, expirationDate: '2026-11-01T00:00:00.000Z' });
    expect(data(sub({ status: 'unpaid' }))).toMatchObject({ isExpired: true, expirationDate: '2026-11-01T00:00:00.000Z' });
    expect(data(sub({ status: 'canceled', ended_at: T('2026-11-10T00:00:00Z'), cancellation_details: { reason: 'payment_failed' } }))).toMatchObject({
      isExpired: true,
      expirationDate: '2026-11-10T00:00:00.000Z',
      cancelationReason: 'System.BillingError',
      renewalIntent: 'Lapse',
    });
    expect(data(sub({ status: 'incomplete' }))).toMatchObject({ isPending: true });
    expect(data(sub({ cancel_at_period_end: true, canceled_at: T('2026-11-20T00:00:00Z') }))).toMatchObject({
      renewalIntent: 'Lapse',
      renewalIntentChangeDate: '2026-11-20T00:00:00.000Z',
      expirationDate: '2026-12-01T00:00:00.000Z',
    });
  });

  it("past_due with the publisher's grace: billing retry, access until the period's start plus STRIPE_GRACE_PERIOD; the customer's metadata names the user", () => {
    const graced = stripeSubscriptionEvents(
      'app',
      'm-3',
      sub({ status: 'past_due', customer: { id: 'cus_1', metadata: { applicationUsername: 'cid' } } }),
      AT,
      {
        usernameKey: 'applicationUsername',
        gracePeriodMs: 7 * 86_400_000,
      },
    )[0].data;
    expect(graced).toMatchObject({
      isBillingRetryPeriod: true,
      expirationDate: '2026-11-01T00:00:00.000Z',
      gracePeriodExpirationDate: '2026-11-08T00:00:00.000Z',
      applicationUsername: 'cid',
    });
  });

  it('an invoice not paid is no revenue; a subscription canceled on an unpaid period was paid through its start', () => {
    const open = { id: 'in_4', status: 'open', amount_paid: 0, currency: 'usd' };
    expect(data(sub({ status: 'past_due', latest_invoice: open }))).not.toHaveProperty('amountMicros');
    expect(data(sub({ status: 'canceled', ended_at: T('2026-11-20T00:00:00Z'), latest_invoice: open }))).toMatchObject({
      isExpired: true,
      expirationDate: '2026-11-01T00:00:00.000Z',
    });
  });

  it('periods on the subscription (API versions before 2025-03-31) read as well; a paid latest invoice gives the amount and its payment date', () => {
    const old = sub({
      current_period_start: T('2026-11-01T00:00:00Z'),
      current_period_end: T('2026-12-01T00:00:00Z'),
      latest_invoice: { id: 'in_9', status: 'paid', amount_paid: 1234, currency: 'eur', status_transitions: { paid_at: T('2026-11-01T00:05:00Z') } },
      items: { data: [{ quantity: 1, price: { id: 'price_m', currency: 'usd', unit_amount: 999 } }] },
    });
    expect(data(old)).toMatchObject({
      transactionId: 'stripe:in_9',
      amountMicros: 12_340_000,
      currency: 'EUR',
      lastRenewalDate: '2026-11-01T00:05:00.000Z',
      expirationDate: '2026-12-01T00:00:00.000Z',
    });
  });

  it('the metadata key names the user (and links the receipt); Checkout links its client_reference_id', () => {
    const events = stripeSubscriptionEvents('app', 'm-2', sub({ metadata: { applicationUsername: 'ann' } }), AT, MAPPING);
    expect(events.map((e) => [e.type, e.id, e.data.applicationUsername])).toEqual([
      ['transaction.updated', 'm-2', 'ann'],
      ['receipt.linked', 'm-2:link', 'ann'],
    ]);
    expect(
      stripeCheckoutEvents(
        'app',
        'evt_1',
        { id: 'cs_1', mode: 'subscription', subscription: 'sub_1', client_reference_id: 'bob' },
        AT,
        'applicationUsername',
        undefined,
      ),
    ).toEqual([
      {
        specversion: '1.0',
        id: 'stripe:evt_1:link',
        source: 'stripe-webhooks',
        type: 'receipt.linked',
        time: '2026-11-28T12:00:00.000Z',
        appid: 'app',
        datacontenttype: 'application/json',
        data: { receiptId: 'stripe:sub_1', applicationUsername: 'bob' },
      },
    ]);
  });
});
