import { PayloadTooLargeException, UnsupportedMediaTypeException } from '@nestjs/common';
import type { FastifyRequest, onRequestHookHandler, preParsingHookHandler, RouteOptions } from 'fastify';
import { ErrorCode } from '../common/errors.js';
import type { RefusalLogging } from '../common/problem.filter.js';
import type { AppConfig } from '../config/app-config.js';
import { Readable } from 'node:stream';
import { guardJsonShape, NOTIFICATION_JSON_MAX_DEPTH, NOTIFICATION_JSON_MAX_ENTRIES, type JsonShapeLimits } from './notification-body-guard.js';

const NOTIFICATION_SHAPE: JsonShapeLimits = { maxDepth: NOTIFICATION_JSON_MAX_DEPTH, maxEntries: NOTIFICATION_JSON_MAX_ENTRIES };
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

/**
 * A Stripe webhook event is one API object (a subscription, an invoice with its lines, a Checkout
 * Session) in an envelope: a few KB, an invoice of many lines tens of KB. 256 KiB is several times
 * the largest; its JSON has hundreds of entries, so its shape limits are wider than the others'.
 */
export const STRIPE_NOTIFICATION_BODY_LIMIT = 256 * 1024;

type Store = 'apple' | 'google' | 'stripe';

/** The routes the stores call, by the URL Nest registers them under. */
const NOTIFICATION_ROUTES: Record<string, { store: Store; bodyLimit: number; shape: JsonShapeLimits; raw?: true }> = {
  '/v2/notifications/apple/:appId': { store: 'apple', bodyLimit: APPLE_NOTIFICATION_BODY_LIMIT, shape: NOTIFICATION_SHAPE },
  '/v2/notifications/google/:appId': { store: 'google', bodyLimit: GOOGLE_NOTIFICATION_BODY_LIMIT, shape: NOTIFICATION_SHAPE },
  // Stripe signs the bytes it sent: the handler needs them as they came (rawBody).
  '/v2/notifications/stripe/:appId': { store: 'stripe', bodyLimit: STRIPE_NOTIFICATION_BODY_LIMIT, shape: { maxDepth: 32, maxEntries: 20_000 }, raw: true },
};

export const JSON_MEDIA_TYPE = /^application\/json\s*(;|$)/i;

function hasBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

function configured(store: Store, config: AppConfig, appId: string): boolean {
  const apps = store === 'apple' ? config.apple?.apps : store === 'google' ? config.google?.apps : config.stripe?.apps;
  return apps?.has(appId) === true;
}

const STORE_NAMES: Record<Store, { variable: string; name: string }> = {
  apple: { variable: 'APPLE_APPS', name: 'App Store' },
  google: { variable: 'GOOGLE_APPS', name: 'Google Play' },
  stripe: { variable: 'STRIPE_APPS', name: 'Stripe' },
};

/**
 * What can be refused from the request line and headers is refused before a byte of the body is
 * read: an application not configured (404), another content type (415), a Content-Length over the
 * route's limit (413). The connection is closed after such an answer, so an unread body is not
 * drained either.
 */
function refuseBeforeBody(store: Store, bodyLimit: number, config: AppConfig): onRequestHookHandler {
  const { variable, name } = STORE_NAMES[store];
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

const shapeGuard =
  (limits: JsonShapeLimits): preParsingHookHandler =>
  (_request, _reply, payload, done) => {
    done(
      null,
      guardJsonShape(payload, limits, (reason) => new StoreNotificationError(ErrorCode.NotificationUnverified, `${reason}: not a store notification`)),
    );
  };

/** The body as it came, kept on the request (`rawBody`) for a signature over its bytes; cut at the route's limit (413). */
const keepRawBody =
  (bodyLimit: number): preParsingHookHandler =>
  (request, reply, payload, done) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let finished = false;
    const finish = (error: Error | null, stream?: Readable) => {
      if (finished) return;
      finished = true;
      done(error, stream);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > bodyLimit) {
        // The rest is read and dropped, not kept; the socket stays to carry the 413, then closes.
        payload.off('data', onData);
        payload.resume();
        void reply.header('connection', 'close');
        return finish(new PayloadTooLargeException(`The body is over the ${bodyLimit} bytes this endpoint takes.`));
      }
      chunks.push(chunk);
    };
    payload.on('data', onData);
    payload.on('error', (error) => finish(error));
    payload.on('end', () => {
      const raw = Buffer.concat(chunks);
      (request as FastifyRequest & { rawBody?: Buffer }).rawBody = raw;
      const stream = Readable.from([raw]) as Readable & { receivedEncodedLength?: number };
      stream.receivedEncodedLength = raw.length;
      finish(null, stream);
    });
  };

export const asArray = <T>(value: T | T[] | undefined): T[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

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
  route.preParsing = [...asArray(route.preParsing), ...(spec.raw ? [keepRawBody(spec.bodyLimit)] : []), shapeGuard(spec.shape)];
  route.config = { ...(route.config as object | undefined), logRefusals: true } satisfies RefusalLogging;
}
