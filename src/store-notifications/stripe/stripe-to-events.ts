// Stripe's objects, as its API answers them, onto the event contract (docs/events/stripe.md has the
// table). Pure: the endpoint verifies the webhook and fetches the current object, this maps it.
import { createHash } from 'node:crypto';
import type { ContractEvent } from '../apple/apple-to-events.js';

/** The fields of a Stripe Subscription this mapping reads (API 2025-03-31 and later: periods on the items; earlier: on the subscription). */
export type StripeSubscription = {
  id: string;
  status: string;
  livemode?: boolean;
  start_date?: number;
  created?: number;
  trial_start?: number | null;
  trial_end?: number | null;
  cancel_at_period_end?: boolean;
  cancel_at?: number | null;
  canceled_at?: number | null;
  ended_at?: number | null;
  cancellation_details?: { reason?: string | null } | null;
  current_period_start?: number;
  current_period_end?: number;
  metadata?: Record<string, string> | null;
  /** Expanded when read by the endpoint and the import: its metadata may name the user. */
  customer?: string | { id: string; metadata?: Record<string, string> | null } | null;
  latest_invoice?: string | StripeInvoice | null;
  items?: {
    data?: {
      quantity?: number;
      current_period_start?: number;
      current_period_end?: number;
      price?: { id?: string; currency?: string; unit_amount?: number | null } | null;
    }[];
  };
};

/** The fields of a Stripe Invoice this mapping reads. */
export type StripeInvoice = {
  id: string;
  status?: string | null;
  amount_paid?: number;
  currency?: string;
  billing_reason?: string | null;
  livemode?: boolean;
  status_transitions?: { paid_at?: number | null } | null;
  lines?: {
    data?: {
      period?: { start?: number; end?: number };
      quantity?: number | null;
      pricing?: { price_details?: { price?: string } | null } | null;
      price?: { id?: string } | null;
    }[];
  };
};

/** The fields of a Checkout Session this mapping reads. */
export type StripeCheckoutSession = {
  id: string;
  mode?: string;
  livemode?: boolean;
  created?: number;
  payment_status?: string;
  client_reference_id?: string | null;
  metadata?: Record<string, string> | null;
  subscription?: string | { id: string } | null;
  payment_intent?: string | { id: string } | null;
  amount_total?: number | null;
  currency?: string | null;
};

/**
 * Currencies whose amounts Stripe gives in whole units, and those in thousandths
 * (docs.stripe.com/currencies, "Zero-decimal currencies", "Three-decimal currencies").
 */
const ZERO_DECIMAL = new Set(['bif', 'clp', 'djf', 'gnf', 'jpy', 'kmf', 'krw', 'mga', 'pyg', 'rwf', 'ugx', 'vnd', 'vuv', 'xaf', 'xof', 'xpf']);
const THREE_DECIMAL = new Set(['bhd', 'jod', 'kwd', 'omr', 'tnd']);

/** An amount in the currency's smallest unit, as Stripe gives it, in millionths of the currency (the contract's amountMicros). */
export function stripeAmountMicros(amount: number, currency: string): number {
  const c = currency.toLowerCase();
  const scale = ZERO_DECIMAL.has(c) ? 1_000_000 : THREE_DECIMAL.has(c) ? 1_000 : 10_000;
  return amount * scale;
}

const iso = (seconds: number | null | undefined) => (typeof seconds === 'number' ? new Date(seconds * 1000).toISOString() : undefined);
const dropUndefined = <T extends Record<string, unknown>>(o: T) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
/** The id of a Stripe field that is an id or, expanded, the object. */
export const idOf = (v: string | { id: string } | null | undefined) => (typeof v === 'string' ? v : (v?.id ?? undefined));

/** Why Stripe ended a subscription (cancellation_details.reason), in the contract's words. */
const CANCELATION: Record<string, string> = { cancellation_requested: 'Customer', payment_failed: 'System.BillingError', payment_disputed: 'Customer' };

/** The username a Stripe object names under the configured metadata key. */
export function usernameIn(metadata: Record<string, string> | null | undefined, key: string): string | undefined {
  const name = metadata?.[key];
  return typeof name === 'string' && name.trim() !== '' ? name : undefined;
}

/**
 * The message id standing in for a webhook's: the state's digest. Fetching the same state again
 * (a webhook delivered twice, or two webhooks about one change) yields the same event id.
 */
export function stripeStateId(kind: string, id: string, state: unknown): string {
  return `stripe-state:${createHash('sha256')
    .update(`${kind}\n${id}\n${JSON.stringify(state)}`)
    .digest('base64url')
    .slice(0, 32)}`;
}

/**
 * A subscription's current state as the transaction of its current period: the latest invoice (each
 * paid invoice is a transaction, filed at its charge date). `at`: when the state was fetched, the
 * event time (Stripe does not deliver webhooks in order; the fetched state is the newest one).
 *
 * Access (docs/api.md's rules, docs/events/stripe.md's table): active and trialing give access to the
 * period's end (a trial to trial_end); past_due is billing retry, paid through the period's start,
 * with the publisher's grace (STRIPE_GRACE_PERIOD) after it;
 * unpaid, canceled, paused and incomplete_expired have ended; incomplete is pending.
 */
export type StripeMapping = { usernameKey: string; /** STRIPE_GRACE_PERIOD in ms (0: none). */ gracePeriodMs: number };

export function stripeSubscriptionEvents(appId: string, messageId: string, sub: StripeSubscription, at: Date, o: StripeMapping): ContractEvent[] {
  const item = sub.items?.data?.[0];
  const price = item?.price ?? undefined;
  const periodStart = item?.current_period_start ?? sub.current_period_start;
  const periodEnd = item?.current_period_end ?? sub.current_period_end;
  if (!price?.id || periodStart === undefined || periodEnd === undefined) return [];
  const invoice = typeof sub.latest_invoice === 'object' && sub.latest_invoice !== null ? sub.latest_invoice : undefined;
  const invoiceId = idOf(sub.latest_invoice);
  const receiptId = `stripe:${sub.id}`;
  const started = sub.start_date ?? sub.created ?? periodStart;
  const status = sub.status;
  const trialing = status === 'trialing';
  const ended = ['canceled', 'unpaid', 'paused', 'incomplete_expired'].includes(status);
  const retrying = status === 'past_due';
  // What the customer has paid through: the period's end once paid; its start while the renewal fails, or when it ended unpaid.
  const unpaidPeriod = invoice !== undefined && invoice.status !== 'paid';
  const expiration = trialing
    ? (sub.trial_end ?? periodEnd)
    : retrying || status === 'unpaid' || status === 'paused' || (status === 'canceled' && unpaidPeriod)
      ? periodStart
      : status === 'canceled'
        ? Math.min(sub.ended_at ?? periodEnd, periodEnd)
        : periodEnd;
  // What was charged, when it was: an invoice not (yet) paid is no revenue, and a price is not what was paid (discounts, tax, tiers).
  const paid = invoice?.status === 'paid' && typeof invoice.amount_paid === 'number' && invoice.currency ? invoice : undefined;
  const currency = paid?.currency;
  const amount = paid?.amount_paid;
  const lapsing = sub.cancel_at_period_end === true || typeof sub.cancel_at === 'number' || status === 'canceled';
  const customer = typeof sub.customer === 'object' ? sub.customer : undefined;
  const username = usernameIn(sub.metadata, o.usernameKey) ?? usernameIn(customer?.metadata, o.usernameKey);
  const time = at.toISOString();
  const data = dropUndefined({
    transactionId: invoiceId ? `stripe:${invoiceId}` : `stripe:${sub.id}:${periodStart}`,
    purchaseId: receiptId,
    productId: `stripe:${price.id}`,
    platform: 'stripe',
    receiptId,
    applicationUsername: username,
    sandbox: sub.livemode === false,
    purchaseDate: iso(started),
    // A renewal is charged at its period's start (the invoice's payment, when it is known).
    lastRenewalDate: periodStart > started ? iso(invoice?.status_transitions?.paid_at ?? periodStart) : undefined,
    expirationDate: iso(expiration),
    renewalIntent: lapsing ? 'Lapse' : 'Renew',
    renewalIntentChangeDate: sub.cancel_at_period_end === true ? iso(sub.canceled_at) : undefined,
    cancelationReason: status === 'canceled' ? (CANCELATION[sub.cancellation_details?.reason ?? ''] ?? 'Customer') : undefined,
    isPending: status === 'incomplete' || status === 'incomplete_expired' ? true : undefined,
    isExpired: ended ? true : undefined,
    isBillingRetryPeriod: retrying,
    // The publisher's grace while Stripe retries (docs/api.md rule 4: billing retry with a grace end beyond the expiration).
    gracePeriodExpirationDate: retrying && o.gracePeriodMs > 0 ? new Date(periodStart * 1000 + o.gracePeriodMs).toISOString() : undefined,
    isTrialPeriod: trialing,
    quantity: item?.quantity,
    amountMicros: amount !== undefined && currency ? stripeAmountMicros(amount, currency) : undefined,
    currency: currency ? currency.toUpperCase() : undefined,
  });
  const events: ContractEvent[] = [
    {
      specversion: '1.0',
      id: messageId,
      source: 'stripe-webhooks',
      type: 'transaction.updated',
      time,
      appid: appId,
      datacontenttype: 'application/json',
      data,
    },
  ];
  if (username) events.push(linked(appId, `${messageId}:link`, time, receiptId, username));
  return events;
}

/**
 * A paid invoice of a subscription's past, as the transaction of its period (what `import stripe`
 * reads for the history before the endpoint): paid through its line's period end, charged at its
 * payment. The subscription's current state comes from stripeSubscriptionEvents; this one is for
 * the invoices before its latest.
 */
export function stripeInvoiceEvents(appId: string, messageId: string, sub: StripeSubscription, invoice: StripeInvoice, at: Date): ContractEvent[] {
  const line = invoice.lines?.data?.[0];
  const priceId = line?.pricing?.price_details?.price ?? line?.price?.id ?? sub.items?.data?.[0]?.price?.id;
  const period = line?.period;
  if (invoice.status !== 'paid' || !priceId || period?.start === undefined || period.end === undefined) return [];
  const receiptId = `stripe:${sub.id}`;
  const started = sub.start_date ?? sub.created ?? period.start;
  const data = dropUndefined({
    transactionId: `stripe:${invoice.id}`,
    purchaseId: receiptId,
    productId: `stripe:${priceId}`,
    platform: 'stripe',
    receiptId,
    sandbox: (invoice.livemode ?? sub.livemode) === false,
    purchaseDate: iso(started),
    lastRenewalDate: period.start > started ? iso(invoice.status_transitions?.paid_at ?? period.start) : undefined,
    expirationDate: iso(period.end),
    // it was followed by a later invoice: the subscription renewed after it
    renewalIntent: 'Renew',
    isTrialPeriod: typeof sub.trial_end === 'number' && invoice.amount_paid === 0 && period.end <= sub.trial_end ? true : undefined,
    quantity: line?.quantity ?? undefined,
    amountMicros: typeof invoice.amount_paid === 'number' && invoice.currency ? stripeAmountMicros(invoice.amount_paid, invoice.currency) : undefined,
    currency: invoice.currency ? invoice.currency.toUpperCase() : undefined,
  });
  return [
    {
      specversion: '1.0',
      id: messageId,
      source: 'stripe-api',
      type: 'transaction.updated',
      time: at.toISOString(),
      appid: appId,
      datacontenttype: 'application/json',
      data,
    },
  ];
}

/**
 * A completed Checkout Session: the app's user (client_reference_id, or the metadata key) linked to
 * the subscription it started; for a one-time payment, the purchase itself, filed at the session's
 * creation, its product the price of its first line item (`priceId`, read from the API).
 */
export function stripeCheckoutEvents(
  appId: string,
  eventId: string,
  session: StripeCheckoutSession,
  at: Date,
  usernameKey: string,
  priceId: string | undefined,
): ContractEvent[] {
  const username = session.client_reference_id?.trim() || usernameIn(session.metadata, usernameKey);
  const time = at.toISOString();
  const subscription = idOf(session.subscription);
  if (session.mode === 'subscription' && subscription) {
    return username ? [linked(appId, `stripe:${eventId}:link`, time, `stripe:${subscription}`, username)] : [];
  }
  const payment = idOf(session.payment_intent);
  if (session.mode !== 'payment' || session.payment_status !== 'paid' || !payment || !priceId) return [];
  const receiptId = `stripe:${payment}`;
  const data = dropUndefined({
    transactionId: receiptId,
    purchaseId: receiptId,
    productId: `stripe:${priceId}`,
    platform: 'stripe',
    receiptId,
    applicationUsername: username,
    sandbox: session.livemode === false,
    purchaseDate: iso(session.created),
    quantity: 1,
    amountMicros: typeof session.amount_total === 'number' && session.currency ? stripeAmountMicros(session.amount_total, session.currency) : undefined,
    currency: session.currency ? session.currency.toUpperCase() : undefined,
  });
  const events: ContractEvent[] = [
    {
      specversion: '1.0',
      id: `stripe:${eventId}`,
      source: 'stripe-webhooks',
      type: 'transaction.updated',
      time,
      appid: appId,
      datacontenttype: 'application/json',
      data,
    },
  ];
  if (username) events.push(linked(appId, `stripe:${eventId}:link`, time, receiptId, username));
  return events;
}

function linked(appId: string, id: string, time: string, receiptId: string, applicationUsername: string): ContractEvent {
  return {
    specversion: '1.0',
    id,
    source: 'stripe-webhooks',
    type: 'receipt.linked',
    time,
    appid: appId,
    datacontenttype: 'application/json',
    data: { receiptId, applicationUsername },
  };
}
