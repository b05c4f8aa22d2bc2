import { PayloadTooLargeException, UnsupportedMediaTypeException } from '@nestjs/common';
import type { FastifyRequest, onRequestHookHandler, preParsingHookHandler, RouteOptions } from 'fastify';
import { ErrorCode } from '../common/errors.js';
import type { RefusalLogging } from '../common/problem.filter.js';
import type { AppConfig } from '../config/app-config.js';
import { guardJsonShape, NOTIFICATION_JSON_MAX_DEPTH, NOTIFICATION_JSON_MAX_ENTRIES } from './notification-body-guard.js';
import { StoreNotificationError } from './store-notification.errors.js';

/**
 * App Store Server Notifications V2 post `{"signedPayload": "<JWS>"}`. The JWS carries its x5c chain
 * (three certificates) and, base64url-encoded inside its payload, signedTransactionInfo and
 * signedRenewalInfo with a chain each: nine certificates, about 15-25 KB in all with Apple's. 64 KiB
 * leaves room for Apple's certificates to grow to twice their size.
 */
export const APPLE_NOTIFICATION_BODY_LIMIT = 64 * 1024;

/**
 * A Pub/Sub push of a Real-time Developer Notification: the envelope (`message.data`, `messageId`,
 * `publishTime`, `attributes`, `subscription`) around a base64 DeveloperNotification of a few hundred
 * bytes, about 1 KB in all. 16 KiB is ten times that.
 */
export const GOOGLE_NOTIFICATION_BODY_LIMIT = 16 * 1024;

type Store = 'apple' | 'google';

/** The routes the stores call, by the URL Nest registers them under. */
const NOTIFICATION_ROUTES: Record<string, { store: Store; bodyLimit: number }> = {
  '/v2/notifications/apple/:appId': { store: 'apple', bodyLimit: APPLE_NOTIFICATION_BODY_LIMIT },
  '/v2/notifications/google/:appId': { store: 'google', bodyLimit: GOOGLE_NOTIFICATION_BODY_LIMIT },
};

const JSON_MEDIA_TYPE = /^application\/json\s*(;|$)/i;

function hasBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

function configured(store: Store, config: AppConfig, appId: string): boolean {
  return store === 'apple' ? config.apple?.apps.has(appId) === true : config.google?.apps.has(appId) === true;
}

/**
 * What can be refused from the request line and headers is refused before a byte of the body is
 * read: an application not configured (404), another content type (415), a Content-Length over the
 * route's limit (413). The connection is closed after such an answer, so an unread body is not
 * drained either.
 */
function refuseBeforeBody(store: Store, bodyLimit: number, config: AppConfig): onRequestHookHandler {
  const variable = store === 'apple' ? 'APPLE_APPS' : 'GOOGLE_APPS';
  const name = store === 'apple' ? 'App Store' : 'Google Play';
  return (request, reply, done) => {
    const appId = (request.params as { appId?: string }).appId ?? '';
    let refusal: Error | undefined;
    if (!configured(store, config, appId)) {
      refusal = new StoreNotificationError(
        ErrorCode.NotFound,
        `no ${name} notifications are configured for application ${JSON.stringify(appId)} (${variable})`,
      );
    } else if (!JSON_MEDIA_TYPE.test(request.headers['content-type'] ?? '')) {
      refusal = new UnsupportedMediaTypeException('The body must be application/json.');
    } else if (Number(request.headers['content-length']) > bodyLimit) {
      refusal = new PayloadTooLargeException(`The body is over the ${bodyLimit} bytes this endpoint takes.`);
    }
    if (refusal && hasBody(request)) void reply.header('connection', 'close');
    done(refusal);
  };
}

const shapeGuard: preParsingHookHandler = (_request, _reply, payload, done) => {
  done(
    null,
    guardJsonShape(
      payload,
      { maxDepth: NOTIFICATION_JSON_MAX_DEPTH, maxEntries: NOTIFICATION_JSON_MAX_ENTRIES },
      (reason) => new StoreNotificationError(ErrorCode.NotificationUnverified, `${reason}: not a store notification`),
    ),
  );
};

const asArray = <T>(value: T | T[] | undefined): T[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

/**
 * For Fastify's onRoute hook: the store notification routes get their body limit (413 beyond, also
 * for chunked bodies, counted as they are read), the checks made before the body is read, the JSON
 * shape guard, and warn-level logs of what they refuse. Other routes are left as they are.
 */
export function applyNotificationRouteOptions(route: RouteOptions, config: AppConfig): void {
  const spec = NOTIFICATION_ROUTES[route.url];
  if (!spec) return;
  route.bodyLimit = spec.bodyLimit;
  route.onRequest = [...asArray(route.onRequest), refuseBeforeBody(spec.store, spec.bodyLimit, config)];
  route.preParsing = [...asArray(route.preParsing), shapeGuard];
  route.config = { ...(route.config as object | undefined), logRefusals: true } satisfies RefusalLogging;
}
