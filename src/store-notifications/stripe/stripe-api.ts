import Stripe from 'stripe';
import type { StripeSettings } from '../../config/app-config.js';
import { idOf, type StripeInvoice, type StripeSubscription } from './stripe-to-events.js';

/** One Stripe API request may take this long before it counts as the API being away. */
export const STRIPE_REQUEST_TIMEOUT_MS = 10_000;

/** What a failed call means to the caller: a thing Stripe does not have, or Stripe (or our key) unavailable now. */
export type StripeCallFailure =
  { kind: 'missing' | 'unavailable'; status?: number; message: string } | { kind: 'rate-limited'; status: 429; message: string; retryAfter?: string };

/**
 * The Stripe API as one app's key sees it, at STRIPE_API_BASE_URL, through Stripe's own library
 * (its paths, parameters, versioning and errors), without its retries: a webhook is retried by Stripe.
 */
export class StripeApi {
  private readonly client: Stripe;

  constructor(apiKey: string, settings: Pick<StripeSettings, 'apiBaseUrl'>) {
    const base = new URL(settings.apiBaseUrl);
    this.client = new Stripe(apiKey, {
      host: base.hostname,
      port: base.port || (base.protocol === 'https:' ? 443 : 80),
      protocol: base.protocol === 'https:' ? 'https' : 'http',
      maxNetworkRetries: 0,
      timeout: STRIPE_REQUEST_TIMEOUT_MS,
      telemetry: false,
    });
  }

  /** The webhook event, verified by Stripe's library: signature over the body's bytes, timestamp within `toleranceSeconds` of `now`. */
  verifyWebhook(raw: Buffer, signature: string, secret: string, toleranceSeconds: number, now: Date): unknown {
    // receivedAt is in milliseconds (the library divides it by 1000).
    return this.client.webhooks.constructEvent(raw, signature, secret, toleranceSeconds, undefined, now.getTime());
  }

  /** The subscription as it is now, with its latest invoice and its customer (whose metadata may name the user). */
  async subscription(id: string): Promise<StripeSubscription> {
    return (await this.client.subscriptions.retrieve(id, { expand: ['latest_invoice', 'customer'] })) as unknown as StripeSubscription;
  }

  /** One page of the app's subscriptions, every status, oldest last (the API's order), created at or after `since` (epoch seconds). */
  async subscriptionPage(o: { since?: number; after?: string; limit?: number }): Promise<{ ids: string[]; hasMore: boolean }> {
    const page = await this.client.subscriptions.list({
      status: 'all',
      limit: o.limit ?? 100,
      ...(o.after ? { starting_after: o.after } : {}),
      ...(o.since !== undefined ? { created: { gte: o.since } } : {}),
    });
    return { ids: page.data.map((s) => s.id), hasMore: page.has_more };
  }

  /** Every paid invoice of a subscription (Stripe's auto-pagination). */
  async paidInvoices(subscription: string): Promise<StripeInvoice[]> {
    const invoices: StripeInvoice[] = [];
    for await (const invoice of this.client.invoices.list({ subscription, status: 'paid', limit: 100 })) invoices.push(invoice as unknown as StripeInvoice);
    return invoices;
  }

  /** The invoice a PaymentIntent paid (invoice payments, since API 2025-03-31 the only link from a payment to its invoice). */
  async invoiceOfPayment(paymentIntent: string): Promise<string | undefined> {
    const payments = await this.client.invoicePayments.list({ payment: { type: 'payment_intent', payment_intent: paymentIntent }, limit: 1 });
    const invoice = payments.data[0]?.invoice;
    return typeof invoice === 'string' ? invoice : invoice?.id;
  }

  /** A charge's PaymentIntent and (before API 2025-03-31) invoice. */
  async chargePayment(chargeId: string): Promise<{ paymentIntent?: string; invoice?: string }> {
    const charge = (await this.client.charges.retrieve(chargeId)) as unknown as {
      payment_intent?: string | { id: string } | null;
      invoice?: string | { id: string } | null;
    };
    return { paymentIntent: idOf(charge.payment_intent), invoice: idOf(charge.invoice) };
  }

  /** An invoice, with its lines. */
  async invoice(id: string): Promise<StripeInvoice & { parent?: unknown; subscription?: unknown }> {
    return (await this.client.invoices.retrieve(id)) as unknown as StripeInvoice & { parent?: unknown; subscription?: unknown };
  }

  /** The price of a Checkout Session's first line item. */
  async checkoutPrice(sessionId: string): Promise<string | undefined> {
    const items = await this.client.checkout.sessions.listLineItems(sessionId, { limit: 1 });
    return items.data[0]?.price?.id;
  }
}

export function classifyStripeCall(error: unknown): StripeCallFailure {
  const e = error as { statusCode?: number; code?: string; message?: string; headers?: Record<string, string | undefined> };
  if (e.statusCode === 429) return { kind: 'rate-limited', status: 429, message: e.message ?? 'rate limited', retryAfter: e.headers?.['retry-after'] };
  if (e.statusCode === 404 || e.code === 'resource_missing') return { kind: 'missing', status: 404, message: e.message ?? 'not found' };
  return { kind: 'unavailable', status: e.statusCode, message: e.message ?? String(error) };
}
