import { Body, Controller, Headers, HttpCode, Inject, Logger, Param, Post, Req } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOkResponse, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { InjectDataSource } from '@nestjs/typeorm';
import type { FastifyRequest } from 'fastify';
import { DataSource } from 'typeorm';
import { ApiNotificationProblemResponses } from '../../common/api-problem-responses.js';
import { Clock } from '../../common/clock.js';
import { ErrorCode } from '../../common/errors.js';
import { PROBLEM_CONTENT_TYPE } from '../../common/problem-http.js';
import { APP_CONFIG, type AppConfig } from '../../config/app-config.js';
import { METRICS } from '../../metrics/metrics.module.js';
import type { Metrics } from '../../metrics/metrics.js';
import type { ContractEvent } from '../apple/apple-to-events.js';
import type { NotificationOutcome } from '../apple/apple-notifications.controller.js';
import { NotificationPublisher } from '../notification-publisher.js';
import { STRIPE_NOTIFICATION_BODY_LIMIT } from '../notification-routes.js';
import { keepRevocations, revokedSnapshot, storedTransaction } from '../stored-transaction.js';
import { mapDates } from '../store-dates.js';
import { StoreNotificationError } from '../store-notification.errors.js';
import { classifyStripeCall, StripeApi } from './stripe-api.js';
import { idOf, stripeCheckoutEvents, stripeInvoiceEvents, stripeStateId, stripeSubscriptionEvents, type StripeCheckoutSession } from './stripe-to-events.js';

const PROBLEM_CONTENT = { [PROBLEM_CONTENT_TYPE]: { schema: { $ref: '#/components/schemas/Problem' } } };

/** A charge (charge.refunded) or a dispute (charge.dispute.*): what names the payment. */
type StripePayment = {
  refunded?: boolean;
  payment_intent?: string | { id: string } | null;
  invoice?: string | { id: string } | null;
  charge?: string | { id: string } | null;
};

/** A verified webhook event: its type and its object, as Stripe sent them. */
type StripeEvent = { id: string; type: string; created: number; data: { object: Record<string, unknown> & { id?: string } } };

/** The subscription an invoice belongs to: `parent.subscription_details` since API 2025-03-31, `subscription` before. */
function invoiceSubscription(invoice: Record<string, unknown>): string | undefined {
  const parent = invoice.parent as { subscription_details?: { subscription?: unknown } } | null | undefined;
  const id = parent?.subscription_details?.subscription ?? invoice.subscription;
  return typeof id === 'string' ? id : typeof (id as { id?: unknown })?.id === 'string' ? (id as { id: string }).id : undefined;
}

/**
 * Stripe webhooks (docs/events/stripe.md). The event is verified with Stripe's library against the
 * endpoint's signing secret (STRIPE_APPS) and timestamp tolerance; then the subscription it concerns
 * is read from the Stripe API and its current state published, so events Stripe delivers late or out
 * of order cannot bring back an older state. 4xx for what fails verification; 503 while Stripe or the
 * log is away (Stripe retries for three days).
 */
@ApiTags('store notifications')
@Controller('v2/notifications/stripe')
export class StripeNotificationsController {
  private readonly logger = new Logger('stripe-notifications');
  private readonly apis = new Map<string, StripeApi>();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectDataSource() private readonly db: DataSource,
    private readonly publisher: NotificationPublisher,
    @Inject(METRICS) private readonly metrics: Metrics,
    private readonly clock: Clock,
  ) {}

  @Post(':appId')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'receiveStripeWebhook',
    summary: 'Receive a Stripe webhook event',
    description:
      "Add this URL as a webhook endpoint in Stripe (events: customer.subscription.*, invoice.*, checkout.session.completed, charge.refunded, charge.dispute.closed) and put its signing secret in STRIPE_APPS. Verified with Stripe's library; mapping in docs/events/stripe.md.",
  })
  @ApiHeader({ name: 'Stripe-Signature', required: true, description: "Stripe's signature of the body: t=<timestamp>,v1=<HMAC-SHA256>" })
  @ApiBody({
    schema: {
      type: 'object',
      required: ['id', 'type', 'data'],
      description: 'A Stripe Event object, as Stripe signs and sends it',
      properties: {
        id: { type: 'string', description: 'evt_...' },
        type: { type: 'string', description: 'customer.subscription.updated, invoice.paid, checkout.session.completed, charge.refunded, ...' },
        data: { type: 'object', required: ['object'], properties: { object: { type: 'object', description: 'The object the event is about' } } },
      },
    },
  })
  @ApiOkResponse({
    schema: {
      type: 'object',
      required: ['status', 'events'],
      properties: { status: { type: 'string', enum: ['published', 'acknowledged'] }, events: { type: 'integer' } },
    },
  })
  @ApiNotificationProblemResponses({ bearer: false })
  @ApiResponse({ status: 413, description: `The body is over ${STRIPE_NOTIFICATION_BODY_LIMIT} bytes`, content: PROBLEM_CONTENT })
  @ApiResponse({ status: 415, description: 'The body is not application/json', content: PROBLEM_CONTENT })
  async receive(
    @Param('appId') appId: string,
    @Headers('stripe-signature') signature: string | undefined,
    @Req() request: FastifyRequest & { rawBody?: Buffer },
    @Body() _parsed: unknown,
  ): Promise<NotificationOutcome> {
    const app = this.config.stripe?.apps.get(appId);
    if (!app) throw new StoreNotificationError(ErrorCode.NotFound, `no Stripe webhooks are configured for application ${JSON.stringify(appId)} (STRIPE_APPS)`);
    const api = this.apiFor(appId, app.apiKey);
    const event = this.verify(appId, api, request.rawBody, signature, app.webhookSecret);
    const events = await this.eventsOf(appId, api, event);
    if (events.length === 0) {
      this.metrics.storeNotifications.inc({ store: 'stripe', type: event.type, outcome: 'acknowledged' });
      return { status: 'acknowledged', events: 0 };
    }
    try {
      await this.publisher.publish(events);
    } catch (error) {
      const retry = error instanceof StoreNotificationError && error.code === ErrorCode.EventLogUnavailable;
      this.metrics.storeNotifications.inc({ store: 'stripe', type: event.type, outcome: retry ? 'retry' : 'refused' });
      throw error;
    }
    this.metrics.storeNotifications.inc({ store: 'stripe', type: event.type, outcome: 'published' });
    return { status: 'published', events: events.length };
  }

  private apiFor(appId: string, apiKey: string): StripeApi {
    let api = this.apis.get(appId);
    if (!api) this.apis.set(appId, (api = new StripeApi(apiKey, this.config.stripe!)));
    return api;
  }

  /** Stripe's signature check (its library), with what failed said in the operator's terms. */
  private verify(appId: string, api: StripeApi, raw: Buffer | undefined, signature: string | undefined, secret: string): StripeEvent {
    if (!signature) throw this.refused(appId, 'no Stripe-Signature header: not a Stripe webhook');
    try {
      return api.verifyWebhook(raw ?? Buffer.alloc(0), signature, secret, this.config.stripe!.toleranceSeconds, this.clock.now()) as StripeEvent;
    } catch (error) {
      const old = /tolerance/i.test((error as Error).message);
      throw this.refused(
        appId,
        old
          ? `the Stripe-Signature timestamp is more than ${this.config.stripe!.toleranceSeconds} s from now (STRIPE_WEBHOOK_TOLERANCE): a replayed or delayed event`
          : "the Stripe-Signature does not match the body under this endpoint's signing secret (STRIPE_APPS)",
        error,
      );
    }
  }

  private async eventsOf(appId: string, api: StripeApi, event: StripeEvent): Promise<ContractEvent[]> {
    const object = event.data?.object ?? {};
    const key = this.config.stripe!.usernameMetadataKey;
    if (event.type.startsWith('customer.subscription.') && typeof object.id === 'string') return this.subscriptionEvents(appId, api, object.id);
    if (event.type.startsWith('invoice.')) {
      const subscription = invoiceSubscription(object);
      return subscription ? this.subscriptionEvents(appId, api, subscription) : [];
    }
    if (event.type === 'checkout.session.completed' || event.type === 'checkout.session.async_payment_succeeded') {
      const session = object as unknown as StripeCheckoutSession;
      const price = session.mode === 'payment' && session.payment_status === 'paid' ? await this.call(() => api.checkoutPrice(session.id)) : undefined;
      const linked = mapDates(() => stripeCheckoutEvents(appId, event.id, session, this.clock.now(), key, price ?? undefined));
      const subscription = typeof session.subscription === 'string' ? session.subscription : session.subscription?.id;
      return subscription ? [...(await this.subscriptionEvents(appId, api, subscription)), ...linked] : linked;
    }
    if (event.type === 'charge.refunded') return this.revocation(appId, api, event, object as StripePayment);
    if (event.type === 'charge.dispute.closed' && object.status === 'lost') return this.revocation(appId, api, event, object as StripePayment);
    return [];
  }

  /**
   * A full refund, or a dispute lost: the paid invoice's transaction (or the one-time payment's) as
   * the read models hold it, revoked at the event's creation. A partial refund revokes nothing (the
   * rest stays paid for); a payment the read models do not hold is nothing to revoke.
   */
  private async revocation(appId: string, api: StripeApi, event: StripeEvent, payment: StripePayment): Promise<ContractEvent[]> {
    if (event.type === 'charge.refunded' && payment.refunded !== true) {
      this.logger.log({ msg: 'partial refund: the rest of the payment stays paid for, nothing revoked', appId, event: event.id });
      return [];
    }
    let paymentIntent = idOf(payment.payment_intent);
    let invoice = idOf(payment.invoice);
    if (!paymentIntent && !invoice && typeof payment.charge === 'string') {
      const charge = await this.call(() => api.chargePayment(payment.charge as string));
      paymentIntent = charge?.paymentIntent;
      invoice = charge?.invoice;
    }
    if (!invoice && paymentIntent) invoice = (await this.call(() => api.invoiceOfPayment(paymentIntent!))) ?? undefined;
    const transactionId = invoice ? `stripe:${invoice}` : paymentIntent ? `stripe:${paymentIntent}` : undefined;
    const stored = transactionId ? await storedTransaction(this.db, appId, transactionId) : undefined;
    const revokedAt = new Date(event.created * 1000);
    if (!stored) return invoice ? this.revokedInvoice(appId, api, event, invoice, revokedAt) : this.nothingToRevoke(appId, event);
    // After the snapshot it revokes, so it wins even when the refund is dated before that snapshot was read.
    const time = new Date(Math.max(this.clock.now().getTime(), stored.versionTime.getTime() + 1));
    const data = revokedSnapshot(stored.snapshot, revokedAt);
    return [
      {
        specversion: '1.0',
        id: `stripe:${event.id}`,
        source: 'stripe-webhooks',
        type: 'transaction.updated',
        time: time.toISOString(),
        appid: appId,
        datacontenttype: 'application/json',
        data,
      },
    ];
  }

  /**
   * A refunded invoice the read models do not hold (the refund came first, or the invoice is older
   * than the endpoint): the invoice itself, read from Stripe, revoked; acknowledging it would lose
   * the refund, which Stripe never sends again.
   */
  private async revokedInvoice(appId: string, api: StripeApi, event: StripeEvent, invoiceId: string, revokedAt: Date): Promise<ContractEvent[]> {
    const at = this.clock.now();
    const invoice = await this.call(() => api.invoice(invoiceId));
    const subscriptionId = invoice ? invoiceSubscription(invoice as Record<string, unknown>) : undefined;
    const subscription = subscriptionId ? await this.call(() => api.subscription(subscriptionId)) : null;
    if (!invoice || !subscription) return this.nothingToRevoke(appId, event);
    const events = mapDates(() => stripeInvoiceEvents(appId, `stripe:${event.id}`, subscription, { ...invoice, status: 'paid' }, at));
    return events.map((e) => ({ ...e, data: revokedSnapshot(e.data, revokedAt) }));
  }

  private nothingToRevoke(appId: string, event: StripeEvent): ContractEvent[] {
    this.logger.warn({ msg: 'a refund or lost dispute of a payment that is no subscription invoice of this app: nothing to revoke', appId, event: event.id });
    return [];
  }

  /** The subscription as Stripe holds it now; one Stripe no longer has is nothing to publish. */
  private async subscriptionEvents(appId: string, api: StripeApi, id: string): Promise<ContractEvent[]> {
    // Taken before the read: a read that starts later sees a state at least as new, so a slow read cannot win over a newer one.
    const at = this.clock.now();
    const subscription = await this.call(() => api.subscription(id));
    if (subscription === null) return [];
    const events = mapDates(() =>
      stripeSubscriptionEvents(appId, stripeStateId('subscription', id, subscription), subscription, at, {
        usernameKey: this.config.stripe!.usernameMetadataKey,
        gracePeriodMs: this.config.stripe!.gracePeriodMs,
      }),
    );
    // Stripe's subscription does not say its latest invoice was refunded: a revocation recorded from the refund stays.
    await keepRevocations(this.db, appId, events);
    return events;
  }

  /** null: Stripe does not have it (404). Anything else failing is Stripe, or our key, unavailable: 503, Stripe retries. */
  private async call<T>(run: () => Promise<T>): Promise<T | null> {
    try {
      return await run();
    } catch (error) {
      const failure = classifyStripeCall(error);
      if (failure.kind === 'missing') return null;
      this.logger.warn(`the Stripe API failed${failure.status ? ` (HTTP ${failure.status})` : ''}: ${failure.message}`);
      throw new StoreNotificationError(ErrorCode.StoreApiUnavailable, 'the Stripe API cannot be read now; Stripe will retry the webhook', { cause: error });
    }
  }

  private refused(appId: string, message: string, cause?: unknown): StoreNotificationError {
    this.metrics.storeNotifications.inc({ store: 'stripe', type: 'unverified', outcome: 'refused' });
    return new StoreNotificationError(ErrorCode.NotificationUnverified, `${message} (application ${appId})`, { cause });
  }
}
