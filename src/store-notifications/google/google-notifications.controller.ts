import { Body, Controller, Headers, HttpCode, Inject, Logger, Param, Post } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { ApiNotificationProblemResponses } from '../../common/api-problem-responses.js';
import { PROBLEM_CONTENT_TYPE } from '../../common/problem-http.js';
import { ErrorCode } from '../../common/errors.js';
import { APP_CONFIG, type AppConfig } from '../../config/app-config.js';
import { METRICS } from '../../metrics/metrics.module.js';
import type { Metrics } from '../../metrics/metrics.js';
import type { ContractEvent } from '../apple/apple-to-events.js';
import type { NotificationOutcome } from '../apple/apple-notifications.controller.js';
import { NotificationPublisher } from '../notification-publisher.js';
import { GOOGLE_NOTIFICATION_BODY_LIMIT } from '../notification-routes.js';
import { eventTimeOf, mapDates } from '../store-dates.js';
import { StoreNotificationError } from '../store-notification.errors.js';
import { classifyFetchError, GooglePlayApi, PubSubTokenVerifier } from './google-play.js';
import { storedTransaction } from '../stored-transaction.js';
import {
  googleProductEvents,
  googleReplacedEvents,
  googleSubscriptionEvents,
  googleVoidedEvents,
  voidedRevokesOrder,
  type DeveloperNotification,
} from './google-to-events.js';

const PROBLEM_CONTENT = { [PROBLEM_CONTENT_TYPE]: { schema: { $ref: '#/components/schemas/Problem' } } };

type PushBody = { message?: { data?: string; messageId?: string; message_id?: string }; subscription?: string };

/**
 * Google Play Real-time Developer Notifications, pushed by Pub/Sub. The notification only names the
 * purchase: its state is fetched from the Play Developer API, and the fetch time is the event time.
 * Pub/Sub retries anything but 2xx, so only what retrying could fix is answered 5xx.
 */
@ApiTags('store notifications')
@Controller('v2/notifications/google')
export class GoogleNotificationsController {
  private readonly logger = new Logger('google-notifications');
  private readonly api?: GooglePlayApi;
  private readonly tokens?: PubSubTokenVerifier;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectDataSource() private readonly db: DataSource,
    private readonly publisher: NotificationPublisher,
    @Inject(METRICS) private readonly metrics: Metrics,
  ) {
    if (config.google) {
      this.api = new GooglePlayApi(config.google);
      this.tokens = new PubSubTokenVerifier(config.google.pubsub);
    }
  }

  @Post(':appId')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'receiveGoogleNotification',
    summary: 'Receive a Google Play Real-time Developer Notification (Pub/Sub push)',
    description: 'The Pub/Sub push subscription authenticates with an OIDC token (GOOGLE_PUBSUB_AUDIENCE); mapping in docs/events/google.md.',
  })
  @ApiBody({
    schema: {
      type: 'object',
      required: ['message'],
      properties: {
        message: {
          type: 'object',
          required: ['data', 'messageId'],
          properties: { data: { type: 'string', description: 'base64 of the DeveloperNotification JSON' }, messageId: { type: 'string' } },
        },
        subscription: { type: 'string' },
      },
    },
  })
  @ApiOkResponse({ schema: { type: 'object', properties: { status: { type: 'string', enum: ['published', 'acknowledged'] }, events: { type: 'integer' } } } })
  @ApiNotificationProblemResponses({ bearer: true })
  @ApiResponse({ status: 413, description: `The body is over ${GOOGLE_NOTIFICATION_BODY_LIMIT} bytes (a push is about 1 KB)`, content: PROBLEM_CONTENT })
  @ApiResponse({ status: 415, description: 'The body is not application/json', content: PROBLEM_CONTENT })
  async receive(
    @Param('appId') appId: string,
    @Headers('authorization') authorization: string | undefined,
    @Body() body: unknown,
  ): Promise<NotificationOutcome> {
    // Unconfigured applications are answered 404 before the body is read (notification-routes.ts); kept as a backstop.
    const app = this.config.google?.apps.get(appId);
    if (!app || !this.api || !this.tokens)
      throw new StoreNotificationError(
        ErrorCode.NotFound,
        `no Google Play notifications are configured for application ${JSON.stringify(appId)} (GOOGLE_APPS)`,
      );
    const token = /^Bearer (\S+)$/i.exec(authorization ?? '')?.[1];
    if (!token) throw this.refused(ErrorCode.TokenMissing, 'the push carries no bearer token: configure the Pub/Sub push subscription with authentication');
    const why = await this.tokens.refuse(token);
    if (why) throw this.refused(ErrorCode.TokenInvalid, `the push token is refused: ${why.reason}`, why.cause);

    const message = (body as PushBody | null)?.message;
    const messageId = message?.messageId ?? message?.message_id;
    if (typeof message?.data !== 'string' || typeof messageId !== 'string' || !messageId) {
      throw this.refused(ErrorCode.NotificationUnverified, 'the body is not a Pub/Sub push: it needs message.data and message.messageId strings');
    }
    let n: DeveloperNotification;
    try {
      n = JSON.parse(Buffer.from(message.data, 'base64').toString('utf8')) as DeveloperNotification;
    } catch (error) {
      throw this.refused(ErrorCode.NotificationUnverified, 'message.data is not base64 of a JSON developer notification', error);
    }
    if (n === null || typeof n !== 'object' || Array.isArray(n))
      throw this.refused(ErrorCode.NotificationUnverified, 'message.data is not base64 of a JSON developer notification object');
    if (n.packageName !== app.packageName)
      throw this.refused(ErrorCode.NotificationUnverified, `the notification is for ${JSON.stringify(n.packageName)}, not ${app.packageName} (GOOGLE_APPS)`);
    const id = `google:${messageId}`;
    const kind = n.subscriptionNotification
      ? 'subscription'
      : n.oneTimeProductNotification
        ? 'one_time_product'
        : n.voidedPurchaseNotification
          ? 'voided_purchase'
          : n.testNotification
            ? 'test'
            : 'other';
    let eventTime: Date | undefined;
    try {
      eventTime = eventTimeOf(n.eventTimeMillis);
    } catch (error) {
      this.metrics.storeNotifications.inc({ store: 'google', type: kind, outcome: 'refused' });
      throw error;
    }
    if (eventTime) this.metrics.storeNotificationDelay.observe({ store: 'google' }, Math.max(0, Date.now() - eventTime.getTime()) / 1000);

    let events: ContractEvent[] = [];
    if (n.subscriptionNotification?.purchaseToken) {
      const purchaseToken = n.subscriptionNotification.purchaseToken;
      const state = await this.fetch(kind, () => this.api!.subscription(app.packageName, purchaseToken));
      if (state) {
        events = mapDates(() => googleSubscriptionEvents(appId, id, purchaseToken, state, new Date()));
        if (state.linkedPurchaseToken) {
          const replacedToken = state.linkedPurchaseToken;
          const replaced = await this.fetch(kind, () => this.api!.subscription(app.packageName, replacedToken));
          if (replaced) events.push(...mapDates(() => googleReplacedEvents(appId, id, replacedToken, replaced, new Date())));
        }
      }
    } else if (n.oneTimeProductNotification?.purchaseToken && n.oneTimeProductNotification.sku) {
      const { purchaseToken, sku } = n.oneTimeProductNotification;
      const purchase = await this.fetch(kind, () => this.api!.product(app.packageName, sku, purchaseToken));
      if (purchase) events = mapDates(() => googleProductEvents(appId, id, purchaseToken, sku, purchase, new Date()));
    } else if (n.voidedPurchaseNotification?.orderId && !voidedRevokesOrder(n.voidedPurchaseNotification)) {
      this.logger.log({
        msg: 'partial (quantity-based) refund: the notification does not say how many units; voidedpurchases.list records it',
        appId,
        orderId: n.voidedPurchaseNotification.orderId,
      });
    } else if (n.voidedPurchaseNotification?.orderId) {
      const stored = await storedTransaction(this.db, appId, `google:${n.voidedPurchaseNotification.orderId}`);
      const voidedAt = eventTime ?? new Date();
      if (stored) {
        events = mapDates(() => googleVoidedEvents(appId, id, stored.snapshot, voidedAt, new Date(), { revocationType: 'REFUND_FULL' }));
      } else
        this.logger.warn({
          msg: 'voided purchase of an order the read models do not hold: nothing to revoke',
          appId,
          orderId: n.voidedPurchaseNotification.orderId,
        });
    }
    if (events.length === 0) {
      this.metrics.storeNotifications.inc({ store: 'google', type: kind, outcome: 'acknowledged' });
      return { status: 'acknowledged', events: 0 };
    }
    try {
      await this.publisher.publish(events);
    } catch (error) {
      this.metrics.storeNotifications.inc({
        store: 'google',
        type: kind,
        outcome: error instanceof StoreNotificationError && error.code === ErrorCode.EventLogUnavailable ? 'retry' : 'refused',
      });
      throw error;
    }
    this.metrics.storeNotifications.inc({ store: 'google', type: kind, outcome: 'published' });
    return { status: 'published', events: events.length };
  }

  /** The fetched state; undefined when Google does not know the purchase (retrying cannot help). */
  private async fetch<T>(kind: string, run: () => Promise<T>): Promise<T | undefined> {
    try {
      return await run();
    } catch (error) {
      const failure = classifyFetchError(error);
      if (failure.kind === 'unknown') {
        this.logger.warn({ msg: 'Google does not know the purchase of a notification: acknowledged', status: failure.status, error: failure.message });
        return undefined;
      }
      this.metrics.storeNotifications.inc({ store: 'google', type: kind, outcome: 'retry' });
      // What the API said stays in the log (it may name the purchase token); the answer says only how it failed.
      this.logger.warn({ msg: 'the Play Developer API could not be asked for the purchase of a notification', status: failure.status, error: failure.message });
      throw new StoreNotificationError(
        ErrorCode.StoreApiUnavailable,
        `the Play Developer API could not be asked for the purchase (${failure.status ? `HTTP ${failure.status}` : 'no answer'}); Pub/Sub will retry`,
      );
    }
  }

  private refused(
    code: ErrorCode.TokenMissing | ErrorCode.TokenInvalid | ErrorCode.NotificationUnverified,
    message: string,
    cause?: unknown,
  ): StoreNotificationError {
    this.metrics.storeNotifications.inc({ store: 'google', type: 'unverified', outcome: 'refused' });
    return new StoreNotificationError(code, message, { cause });
  }
}
