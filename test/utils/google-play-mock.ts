import { generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import jwt from 'jsonwebtoken';

/**
 * Google's side, on loopback: the JWKS Pub/Sub's OIDC tokens are checked against, and the Play
 * Developer API answering purchases.subscriptionsv2.get, purchases.products.get and
 * purchases.voidedpurchases.list with documented shapes. API calls must carry a JWT signed by the
 * test service account with the androidpublisher scope, as the service sends them with
 * GOOGLE_API_SELF_SIGNED_JWT. Tokens Google forgot answer 410 (expired for long) or 404; a rate
 * limit answers 429 with Retry-After; `calls` counts every API request.
 */
export async function startGooglePlayMock() {
  const pubsubKey = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pubsubKid = randomUUID();
  const account = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const subscriptions = new Map<string, unknown>();
  const products = new Map<string, unknown>();
  const forgotten = new Map<string, number>();
  /** Voided purchases as Google keeps them: `seenAt` is when Google saw the void (what startTime filters on). */
  const voided = new Map<string, { purchase: Record<string, unknown>; subscription: boolean; seenAt: number }[]>();
  const calls: string[] = [];
  let failNext = 0;
  let rateLimitNext = 0;
  let retryAfter = '1';
  let delayMs = 0;

  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const send = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (url.pathname === '/certs') return send(200, { keys: [{ ...pubsubKey.publicKey.export({ format: 'jwk' }), kid: pubsubKid, alg: 'RS256', use: 'sig' }] });
    calls.push(`${req.method} ${url.pathname}`);
    try {
      const claims = jwt.verify(/^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '', account.publicKey as KeyObject, {
        algorithms: ['RS256'],
      }) as jwt.JwtPayload;
      if (!String(claims.scope).includes('https://www.googleapis.com/auth/androidpublisher')) throw new Error('no androidpublisher scope');
    } catch (error) {
      return send(401, {
        error: { code: 401, message: `Request had invalid authentication credentials: ${(error as Error).message}`, status: 'UNAUTHENTICATED' },
      });
    }
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    if (rateLimitNext > 0) {
      rateLimitNext--;
      res.setHeader('retry-after', retryAfter);
      return send(429, {
        error: { code: 429, message: "Quota exceeded for quota metric 'Queries' and limit 'Queries per minute'.", status: 'RESOURCE_EXHAUSTED' },
      });
    }
    if (failNext > 0) {
      failNext--;
      return send(503, { error: { code: 503, message: 'The service is currently unavailable.', status: 'UNAVAILABLE' } });
    }
    const sub = /^\/androidpublisher\/v3\/applications\/([^/]+)\/purchases\/subscriptionsv2\/tokens\/([^/]+)$/.exec(url.pathname);
    const product = /^\/androidpublisher\/v3\/applications\/([^/]+)\/purchases\/products\/([^/]+)\/tokens\/([^/]+)$/.exec(url.pathname);
    const voidedList = /^\/androidpublisher\/v3\/applications\/([^/]+)\/purchases\/voidedpurchases$/.exec(url.pathname);
    if (voidedList) return send(...listVoided(voidedList[1], url.searchParams));
    const key = sub ? `${sub[1]}/${decodeURIComponent(sub[2])}` : product ? `${product[1]}/${decodeURIComponent(product[3])}` : '';
    const gone = forgotten.get(key);
    if (gone === 410)
      return send(410, {
        error: {
          code: 410,
          message: 'The subscription purchase is no longer available for query because it has been expired for too long.',
          status: 'GONE',
          errors: [{ reason: 'subscriptionPurchaseNoLongerAvailable' }],
        },
      });
    if (gone === 404)
      return send(404, {
        error: { code: 404, message: 'The purchase token was not found.', status: 'NOT_FOUND', errors: [{ reason: 'purchaseTokenNotFound' }] },
      });
    const found = sub
      ? subscriptions.get(`${sub[1]}/${decodeURIComponent(sub[2])}`)
      : product
        ? products.get(`${product[1]}/${product[2]}/${decodeURIComponent(product[3])}`)
        : undefined;
    if (found === undefined) return send(404, { error: { code: 404, message: 'The purchase token was not found.', status: 'NOT_FOUND' } });
    send(200, found);
  });

  /** voidedpurchases.list: startTime (at most 30 days back), type 0 (products only, the default) or 1, maxResults, token. */
  function listVoided(packageName: string, q: URLSearchParams): [number, unknown] {
    const now = Date.now();
    const page = q.get('token');
    let offset = 0;
    let startTime: number;
    let type: number;
    const maxResults = Math.min(1000, Number(q.get('maxResults') ?? 1000));
    if (page) {
      // The page token carries the query it continues; startTime is ignored beside it.
      const decoded = JSON.parse(Buffer.from(page, 'base64url').toString('utf8')) as { offset: number; startTime: number; type: number };
      ({ offset, startTime, type } = decoded);
    } else {
      startTime = q.has('startTime') ? Number(q.get('startTime')) : now - 30 * 86_400_000;
      type = Number(q.get('type') ?? 0);
      if (startTime < now - 30 * 86_400_000 - 60_000)
        return [400, { error: { code: 400, message: 'Start time cannot be more than 30 days ago.', status: 'INVALID_ARGUMENT' } }];
    }
    const all = (voided.get(packageName) ?? []).filter((v) => v.seenAt >= startTime && (type === 1 || !v.subscription)).sort((a, b) => a.seenAt - b.seenAt);
    const slice = all.slice(offset, offset + maxResults);
    const next =
      offset + maxResults < all.length ? Buffer.from(JSON.stringify({ offset: offset + maxResults, startTime, type })).toString('base64url') : undefined;
    return [
      200,
      {
        pageInfo: { totalResults: all.length, resultPerPage: maxResults, startIndex: offset },
        ...(next ? { tokenPagination: { nextPageToken: next } } : {}),
        voidedPurchases: slice.map((v) => ({ kind: 'androidpublisher#voidedPurchase', ...v.purchase })),
      },
    ];
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    base,
    jwksUri: `${base}/certs`,
    calls,
    /** The service account key file the service is configured with. */
    serviceAccountKey: JSON.stringify({
      type: 'service_account',
      project_id: 'test-project',
      private_key_id: 'test-key-1',
      private_key: account.privateKey.export({ format: 'pem', type: 'pkcs8' }),
      client_email: 'play-reader@test-project.iam.gserviceaccount.com',
      client_id: '1',
      token_uri: 'https://oauth2.googleapis.com/token',
    }),
    setSubscription: (packageName: string, token: string, state: unknown) => subscriptions.set(`${packageName}/${token}`, state),
    setProduct: (packageName: string, sku: string, token: string, purchase: unknown) => products.set(`${packageName}/${sku}/${token}`, purchase),
    failNextCalls: (n: number) => (failNext = n),
    /** Google no longer knows the token: 410 (expired for long) or 404. One-time products are keyed by token alone. */
    forget: (packageName: string, token: string, status: 404 | 410 = 410) => forgotten.set(`${packageName}/${token}`, status),
    /** A voided purchase as voidedpurchases.list returns it (orderId, purchaseToken, purchaseTimeMillis, voidedTimeMillis, voidedSource, voidedReason). */
    addVoided: (packageName: string, purchase: Record<string, unknown>, o: { subscription?: boolean; seenAt?: number } = {}) => {
      const list = voided.get(packageName) ?? [];
      list.push({ purchase, subscription: o.subscription ?? false, seenAt: o.seenAt ?? Number(purchase.voidedTimeMillis ?? Date.now()) });
      voided.set(packageName, list);
    },
    /** The next n API calls answer 429 with this Retry-After (seconds, or an HTTP date). */
    rateLimitNextCalls: (n: number, after = '1') => {
      rateLimitNext = n;
      retryAfter = after;
    },
    /** Every API call waits this long before it is answered. */
    setDelay: (ms: number) => (delayMs = ms),
    /** API calls so far whose "METHOD path" matches. */
    count: (pattern: RegExp) => calls.filter((c) => pattern.test(c)).length,
    /** An OIDC token as Pub/Sub's push signs it (or a forged one, with another key). */
    pushToken(o: { audience: string; email?: string; forged?: boolean; issuer?: string; expiresIn?: number }) {
      const key = o.forged ? generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey : pubsubKey.privateKey;
      return jwt.sign({ email: o.email ?? 'pubsub-push@test-project.iam.gserviceaccount.com', email_verified: true }, key, {
        algorithm: 'RS256',
        keyid: pubsubKid,
        audience: o.audience,
        issuer: o.issuer ?? 'https://accounts.google.com',
        expiresIn: o.expiresIn ?? 3600,
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
