// Stripe subscriptions brought in from the Stripe API: the events the webhook endpoint publishes
// (stripe-to-events.ts is the one mapping), with ids derived from what was read.
import type { StripeApi } from '../../store-notifications/stripe/stripe-api.js';
import { classifyStripeCall } from '../../store-notifications/stripe/stripe-api.js';
import { stripeInvoiceEvents, stripeStateId, stripeSubscriptionEvents, type StripeMapping } from '../../store-notifications/stripe/stripe-to-events.js';
import { ImportFatalError, LineError, StoreRetryableError } from '../import-errors.js';
import type { ImportEvent, LineResult, SourceLine } from '../import-runner.js';
import { parseRetryAfter, RetryGate, withStoreRetries } from '../store-retry.js';

/**
 * The app's subscriptions, every status, as the import runner's lines (one subscription id a line),
 * page by page: a page is asked for only when the runner wants more lines, so memory stays one page
 * whatever the number of subscriptions. `since`: created at or after (epoch seconds).
 */
export function stripeSubscriptionLines(api: StripeApi, since: number | undefined, signal?: AbortSignal): AsyncIterable<SourceLine> {
  const gate = new RetryGate();
  return {
    async *[Symbol.asyncIterator]() {
      let after: string | undefined;
      let line = 0;
      while (!signal?.aborted) {
        // The list is retried like a line (429 and 5xx waited out); a key Stripe refuses stops the run.
        const page = await withStoreRetries(
          async () => (await withStripeErrors(() => api.subscriptionPage({ since, after }), 'the subscription list')) ?? { ids: [], hasMore: false },
          gate,
          {},
          signal,
        );
        for (const id of page.ids) yield { line: ++line, bytes: id.length, text: id };
        if (!page.hasMore || page.ids.length === 0) return;
        after = page.ids.at(-1);
      }
    },
  };
}

const SUBSCRIPTION_ID = /^sub_[A-Za-z0-9]{1,250}$/;

export function parseStripeLine(text: string): string {
  if (!SUBSCRIPTION_ID.test(text)) throw new LineError(`${JSON.stringify(text.slice(0, 60))} is not a Stripe subscription id`);
  return text;
}

/**
 * One subscription: its paid invoices before the latest (each a transaction of its period) and its
 * current state. Every event's id is the digest of what it was made from, so the same answer
 * imported twice is the same events; a subscription Stripe no longer has is skipped.
 */
export async function stripeImportEvents(appId: string, api: StripeApi, id: string, mapping: StripeMapping, now: () => Date): Promise<LineResult> {
  const subscription = await withStripeErrors(() => api.subscription(id), `subscription ${id}`);
  if (subscription === null) return { skip: `Stripe no longer has subscription ${id}` };
  const invoices = (await withStripeErrors(() => api.paidInvoices(id), `the invoices of ${id}`)) ?? [];
  const at = now();
  const latest = typeof subscription.latest_invoice === 'string' ? subscription.latest_invoice : subscription.latest_invoice?.id;
  const events = [
    ...invoices.filter((i) => i.id !== latest).flatMap((i) => stripeInvoiceEvents(appId, stripeStateId('invoice', i.id, i), subscription, i, at)),
    ...stripeSubscriptionEvents(appId, stripeStateId('subscription', id, subscription), subscription, at, mapping),
  ];
  return events.length > 0 ? { events: events as unknown as ImportEvent[] } : { skip: `subscription ${id} has no price or period to record` };
}

/** A failed Stripe call as the import runner treats it: 429 and 5xx retried (429 with its Retry-After), 401/403 stop the run, 404 is null. */
async function withStripeErrors<T>(run: () => Promise<T>, what: string): Promise<T | null> {
  try {
    return await run();
  } catch (error) {
    const failure = classifyStripeCall(error);
    if (failure.kind === 'missing') return null;
    if (failure.kind === 'rate-limited')
      throw new StoreRetryableError(`Stripe is rate limiting (429, ${what})`, { reason: 'rate-limited', retryAfterMs: parseRetryAfter(failure.retryAfter) });
    if (failure.status === 401 || failure.status === 403)
      throw new ImportFatalError(`Stripe refused the API key of this application (${failure.status}): check the 3rd part of its STRIPE_APPS entry`);
    if (failure.status !== undefined && failure.status >= 400 && failure.status < 500) throw new LineError(`Stripe refused ${what}: HTTP ${failure.status}`);
    throw new StoreRetryableError(`the Stripe API could not answer ${what}${failure.status ? ` (HTTP ${failure.status})` : ''}`, { reason: 'unavailable' });
  }
}
