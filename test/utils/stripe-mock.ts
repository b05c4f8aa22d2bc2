import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

type Json = Record<string, any>;
const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/stripe');
/** One of Stripe's example objects (test/fixtures/stripe/README.md), a fresh copy each time. */
export const stripeFixture = (name: 'subscription' | 'invoice' | 'checkout.session' | 'event' | 'line_item' | 'invoice_payment' | 'charge' | 'dispute'): Json =>
  JSON.parse(readFileSync(path.join(fixtures, `${name}.json`), 'utf8'));

/**
 * The Stripe API on loopback, answering in the shapes of Stripe's OpenAPI fixtures: GET
 * /v1/subscriptions/{id} (expand[]=latest_invoice), GET /v1/checkout/sessions/{id}/line_items,
 * GET /v1/invoice_payments (by payment_intent), GET /v1/invoices/{id}, GET /v1/charges/{id}.
 * Requests must carry the API key as a bearer token. Unknown ids answer Stripe's 404
 * (resource_missing); `failNext` answers 500s; `calls` counts requests.
 */
export async function startStripeMock(apiKey: string) {
  const subscriptions = new Map<string, Json>();
  const invoices = new Map<string, Json>();
  const lineItems = new Map<string, Json[]>();
  const invoiceOfPayment = new Map<string, string>();
  const charges = new Map<string, Json>();
  const calls: string[] = [];
  let failNext = 0;
  let limitNext = 0;
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    calls.push(`${req.method} ${url.pathname}`);
    const send = (status: number, body: unknown) =>
      res.writeHead(status, { 'content-type': 'application/json', 'request-id': 'req_mock' }).end(JSON.stringify(body));
    if (req.headers.authorization !== `Bearer ${apiKey}`)
      return send(401, { error: { type: 'invalid_request_error', message: 'Invalid API Key provided: sk_test_****' } });
    if (limitNext > 0) {
      limitNext--;
      res.setHeader('retry-after', '1');
      return send(429, { error: { type: 'invalid_request_error', code: 'rate_limit', message: 'Too many requests hit the API too quickly.' } });
    }
    if (failNext > 0) {
      failNext--;
      return send(500, { error: { type: 'api_error', message: 'An unknown error occurred' } });
    }
    const missing = (what: string, id: string) =>
      send(404, { error: { type: 'invalid_request_error', code: 'resource_missing', param: 'id', message: `No such ${what}: '${id}'` } });
    /** A list page as Stripe pages: newest first, `limit`, after the object `starting_after`. */
    const page = (all: Json[]) => {
      const limit = Number(url.searchParams.get('limit') ?? 10);
      const after = url.searchParams.get('starting_after');
      const from = after ? all.findIndex((o) => o.id === after) + 1 : 0;
      const data = all.slice(from, from + limit);
      return send(200, { object: 'list', data, has_more: from + limit < all.length, url: url.pathname });
    };
    if (req.method === 'GET' && url.pathname === '/v1/subscriptions') {
      const since = Number(url.searchParams.get('created[gte]') ?? 0);
      return page([...subscriptions.values()].filter((s) => (s.created ?? 0) >= since).sort((a, b) => b.created - a.created || (a.id < b.id ? -1 : 1)));
    }
    if (req.method === 'GET' && url.pathname === '/v1/invoices') {
      const of = url.searchParams.get('subscription');
      const status = url.searchParams.get('status');
      const matching = [...invoices.values()].filter((i) => i.parent?.subscription_details?.subscription === of && (!status || i.status === status));
      return page(matching.sort((a, b) => (b.status_transitions?.paid_at ?? 0) - (a.status_transitions?.paid_at ?? 0)));
    }
    const sub = /^\/v1\/subscriptions\/([^/]+)$/.exec(url.pathname);
    if (req.method === 'GET' && sub) {
      const found = subscriptions.get(sub[1]);
      if (!found) return missing('subscription', sub[1]);
      // expand[]=x or expand[0]=x, as Stripe's libraries send it
      const expand = [...url.searchParams.entries()].filter(([k]) => /^expand\[\d*\]$/.test(k)).map(([, v]) => v);
      const latest = found.latest_invoice;
      return send(200, {
        ...found,
        latest_invoice: expand.includes('latest_invoice') && typeof latest === 'string' ? (invoices.get(latest) ?? latest) : latest,
      });
    }
    if (req.method === 'GET' && url.pathname === '/v1/invoice_payments') {
      // payment[type]=payment_intent&payment[payment_intent]=pi_...: the invoice a payment paid
      const pi = url.searchParams.get('payment[payment_intent]') ?? '';
      const invoice = invoiceOfPayment.get(pi);
      const data = invoice
        ? [{ ...stripeFixture('invoice_payment'), id: `inpay_${pi}`, invoice, payment: { type: 'payment_intent', payment_intent: pi }, status: 'paid' }]
        : [];
      return send(200, { object: 'list', data, has_more: false, url: url.pathname });
    }
    const inv = /^\/v1\/invoices\/([^/]+)$/.exec(url.pathname);
    if (req.method === 'GET' && inv) {
      const found = invoices.get(inv[1]);
      return found ? send(200, found) : missing('invoice', inv[1]);
    }
    const charge = /^\/v1\/charges\/([^/]+)$/.exec(url.pathname);
    if (req.method === 'GET' && charge) {
      const found = charges.get(charge[1]);
      return found ? send(200, found) : missing('charge', charge[1]);
    }
    const items = /^\/v1\/checkout\/sessions\/([^/]+)\/line_items$/.exec(url.pathname);
    if (req.method === 'GET' && items) {
      const found = lineItems.get(items[1]);
      if (!found) return missing('checkout session', items[1]);
      return send(200, { object: 'list', data: found, has_more: false, url: url.pathname });
    }
    send(404, { error: { type: 'invalid_request_error', message: `Unrecognized request URL (${req.method}: ${url.pathname})` } });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    /** Sets what the API answers for a subscription (its latest_invoice an id of an invoice set with setInvoice). */
    setSubscription: (subscription: Json) => subscriptions.set(subscription.id, subscription),
    setInvoice: (invoice: Json) => invoices.set(invoice.id, invoice),
    setLineItems: (sessionId: string, items: Json[]) => lineItems.set(sessionId, items),
    /** The invoice a PaymentIntent paid, as invoice payments list it. */
    setInvoicePayment: (paymentIntent: string, invoiceId: string) => invoiceOfPayment.set(paymentIntent, invoiceId),
    setCharge: (c: Json) => charges.set(c.id, c),
    failNext: (n: number) => (failNext = n),
    /** The next n requests answer 429 with Retry-After: 1. */
    rateLimitNext: (n: number) => (limitNext = n),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
