import { UnsupportedMediaTypeException } from '@nestjs/common';
import type { onRequestHookHandler, preParsingHookHandler, RouteOptions } from 'fastify';
import { InvalidParameterError } from '../common/errors.js';
import type { RefusalLogging } from '../common/problem.filter.js';
import { guardJsonShape } from '../store-notifications/notification-body-guard.js';
import { asArray, JSON_MEDIA_TYPE } from '../store-notifications/notification-routes.js';

/**
 * The largest body the purchase routes take: the largest StoreKit 1 app receipt taken (base64,
 * APP_RECEIPT_MAX_CHARS) and room for the rest. A StoreKit 2 JWS is 3-6 KB; a Play token under 1 KB.
 */
export const PURCHASE_BODY_LIMIT = 512 * 1024;
/**
 * JSON shape limits by route: a purchase body is a flat object; a cordova-plugin-purchase validator
 * body nests products, offers and pricing phases six levels deep and, once a day, lists every product
 * of the app (a dozen entries per offer).
 */
const PURCHASE_ROUTES: Record<string, { maxDepth: number; maxEntries: number }> = {
  '/v2/purchases': { maxDepth: 8, maxEntries: 256 },
  '/v2/purchases/validator': { maxDepth: 12, maxEntries: 16_384 },
};

const jsonOnly: onRequestHookHandler = (request, _reply, done) => {
  done(JSON_MEDIA_TYPE.test(request.headers['content-type'] ?? '') ? undefined : new UnsupportedMediaTypeException('The body must be application/json.'));
};

const shapeGuard =
  (limits: { maxDepth: number; maxEntries: number }): preParsingHookHandler =>
  (_request, _reply, payload, done) => {
    done(
      null,
      guardJsonShape(payload, limits, (reason) => new InvalidParameterError('body', `${reason}: not a purchase`)),
    );
  };

/** For Fastify's onRoute hook: the purchase routes' body limit (413 beyond), JSON only (415), the JSON shape guard, warn-level logs of refusals. */
export function applyPurchaseRouteOptions(route: RouteOptions): void {
  const limits = PURCHASE_ROUTES[route.url];
  if (!limits || route.method !== 'POST') return;
  route.bodyLimit = PURCHASE_BODY_LIMIT;
  route.onRequest = [...asArray(route.onRequest), jsonOnly];
  route.preParsing = [...asArray(route.preParsing), shapeGuard(limits)];
  route.config = { ...(route.config as object | undefined), logRefusals: true } satisfies RefusalLogging;
}
