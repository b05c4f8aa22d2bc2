import { Body, Controller, HttpCode, Inject, Param, Post } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { VerificationException, VerificationStatus } from '@apple/app-store-server-library';
import { ApiNotificationProblemResponses } from '../../common/api-problem-responses.js';
import { PROBLEM_CONTENT_TYPE } from '../../common/problem-http.js';
import { Clock } from '../../common/clock.js';
import { ErrorCode } from '../../common/errors.js';
import { APP_CONFIG, type AppConfig } from '../../config/app-config.js';
import { METRICS } from '../../metrics/metrics.module.js';
import type { Metrics } from '../../metrics/metrics.js';
import { NotificationPublisher } from '../notification-publisher.js';
import { APPLE_NOTIFICATION_BODY_LIMIT } from '../notification-routes.js';
import { mapDates, refuseUnstorableDates } from '../store-dates.js';
import { StoreNotificationError } from '../store-notification.errors.js';
import { appleToEvents, type AppleRenewalInfo, type AppleTransaction } from './apple-to-events.js';
import { appleVerifierFor, type AppleVerifier } from './apple-verifier.js';

const PROBLEM_CONTENT = { [PROBLEM_CONTENT_TYPE]: { schema: { $ref: '#/components/schemas/Problem' } } };

/** What each way of failing Apple's verification means, in the store operator's terms. */
const VERIFICATION_FAILURES: Partial<Record<VerificationStatus, string>> = {
  [VerificationStatus.VERIFICATION_FAILURE]:
    'the signature or the certificate chain does not verify against APPLE_ROOT_CERTIFICATES, or the payload is not a JWS of the expected shape',
  [VerificationStatus.INVALID_APP_IDENTIFIER]: 'it is for another bundle id or app Apple id',
  [VerificationStatus.INVALID_ENVIRONMENT]: 'it is for the other environment',
  [VerificationStatus.INVALID_CHAIN_LENGTH]: 'its x5c chain does not hold three certificates',
  [VerificationStatus.INVALID_CERTIFICATE]: 'a certificate of its chain is unreadable, or not valid at the signing date (within a week) or now',
  [VerificationStatus.FAILURE]: 'its payload does not have the documented fields and types',
};

export type NotificationOutcome = { status: 'published' | 'acknowledged'; events: number };

const outcomeSchema = {
  type: 'object',
  required: ['status', 'events'],
  properties: {
    status: { type: 'string', enum: ['published', 'acknowledged'], description: 'acknowledged: a notification type that carries no transaction (TEST, ...)' },
    events: { type: 'integer', description: 'Events appended to the log' },
  },
} as const;

/**
 * App Store Server Notifications V2. Apple signs them; there is no bearer token. 200 once the events
 * are in the log; 4xx for what fails verification (Apple stops retrying); 503 while the log is away
 * (Apple retries).
 */
@ApiTags('store notifications')
@Controller('v2/notifications/apple')
export class AppleNotificationsController {
  private readonly verifiers = new Map<string, AppleVerifier>();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly publisher: NotificationPublisher,
    @Inject(METRICS) private readonly metrics: Metrics,
    private readonly clock: Clock,
  ) {}

  @Post(':appId')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'receiveAppleNotification',
    summary: 'Receive an App Store Server Notification V2',
    description: "Point App Store Connect at this URL. Verified with Apple's library against APPLE_ROOT_CERTIFICATES; mapping in docs/events/apple.md.",
  })
  @ApiBody({ schema: { type: 'object', required: ['signedPayload'], properties: { signedPayload: { type: 'string', description: 'The JWS Apple sends' } } } })
  @ApiOkResponse({ schema: outcomeSchema as object })
  @ApiNotificationProblemResponses({ bearer: false })
  @ApiResponse({ status: 413, description: `The body is over ${APPLE_NOTIFICATION_BODY_LIMIT} bytes (Apple's are about 15-25 KB)`, content: PROBLEM_CONTENT })
  @ApiResponse({ status: 415, description: 'The body is not application/json', content: PROBLEM_CONTENT })
  async receive(@Param('appId') appId: string, @Body() body: unknown): Promise<NotificationOutcome> {
    const verifier = this.verifierFor(appId);
    const signedPayload = (body as { signedPayload?: unknown } | null)?.signedPayload;
    if (typeof signedPayload !== 'string') throw this.refused(appId, 'the body must be JSON with a signedPayload string');
    const notification = await this.verify('signedPayload', appId, () => verifier.verifyAndDecodeNotification(signedPayload));
    // How late the store delivers (docs/operations.md, "Reconciliation"): signedDate is when Apple signed it.
    if (typeof notification.signedDate === 'number')
      this.metrics.storeNotificationDelay.observe({ store: 'apple' }, Math.max(0, Date.now() - notification.signedDate) / 1000);
    const type = notification.notificationType ?? 'UNKNOWN';
    const signedTransaction = notification.data?.signedTransactionInfo;
    const signedRenewal = notification.data?.signedRenewalInfo;
    const transaction = signedTransaction
      ? await this.verify('signedTransactionInfo', appId, () => verifier.verifyAndDecodeTransaction(signedTransaction))
      : undefined;
    const renewal = signedRenewal ? await this.verify('signedRenewalInfo', appId, () => verifier.verifyAndDecodeRenewalInfo(signedRenewal)) : undefined;
    try {
      refuseUnstorableDates('signedPayload', notification);
      refuseUnstorableDates('signedTransactionInfo', transaction);
      refuseUnstorableDates('signedRenewalInfo', renewal);
    } catch (error) {
      this.metrics.storeNotifications.inc({ store: 'apple', type, outcome: 'refused' });
      throw error;
    }
    const events = mapDates(() => appleToEvents(appId, notification, transaction as AppleTransaction | undefined, renewal as AppleRenewalInfo | undefined));
    if (events.length === 0) {
      this.metrics.storeNotifications.inc({ store: 'apple', type, outcome: 'acknowledged' });
      return { status: 'acknowledged', events: 0 };
    }
    try {
      await this.publisher.publish(events);
    } catch (error) {
      this.metrics.storeNotifications.inc({
        store: 'apple',
        type,
        outcome: error instanceof StoreNotificationError && error.code === ErrorCode.EventLogUnavailable ? 'retry' : 'refused',
      });
      throw error;
    }
    this.metrics.storeNotifications.inc({ store: 'apple', type, outcome: 'published' });
    return { status: 'published', events: events.length };
  }

  private verifierFor(appId: string): AppleVerifier {
    // Unconfigured applications are answered 404 before the body is read (notification-routes.ts); kept as a backstop.
    const app = this.config.apple?.apps.get(appId);
    if (!app)
      throw new StoreNotificationError(ErrorCode.NotFound, `no App Store notifications are configured for application ${JSON.stringify(appId)} (APPLE_APPS)`);
    let verifier = this.verifiers.get(appId);
    if (!verifier) {
      // No online checks: no network at run time; the chain is checked against the configured roots (apple-verifier.ts says at which instant).
      verifier = appleVerifierFor(this.config.apple!.rootCertificates, app, () => this.clock.now().getTime());
      this.verifiers.set(appId, verifier);
    }
    return verifier;
  }

  /** Apple's verdict, named, with what it means; what the library said underneath (a TypeError, say) goes to the log only. */
  private async verify<T>(field: string, appId: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      if (!(error instanceof VerificationException)) throw error;
      const why = VerificationStatus[error.status] ?? String(error.status);
      const meaning = VERIFICATION_FAILURES[error.status];
      throw this.refused(appId, `${field} failed verification: ${why}${meaning ? ` (${meaning})` : ''}`, error.cause);
    }
  }

  private refused(appId: string, message: string, cause?: unknown): StoreNotificationError {
    this.metrics.storeNotifications.inc({ store: 'apple', type: 'unverified', outcome: 'refused' });
    return new StoreNotificationError(ErrorCode.NotificationUnverified, `${message} (application ${appId})`, { cause });
  }
}
