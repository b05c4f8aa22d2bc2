import { generateKeyPairSync } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import jwt from 'jsonwebtoken';
import { signAppleJws, type AppleTestCa } from '../../src/store-notifications/apple/apple-test-ca.js';

type Payload = Record<string, unknown>;
/** A transaction as JWSTransactionDecodedPayload carries it (dates in epoch ms); bundleId and environment are filled in. */
export type MockTransaction = Payload & { transactionId: string; originalTransactionId: string; productId: string; purchaseDate: number };
/** A chain's state in Get All Subscription Statuses: status 1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked. */
export type MockStatus = { status: number; renewal: Payload };
export type MockNotification = {
  notificationType: string;
  subtype?: string;
  notificationUUID: string;
  signedDate: number;
  transaction?: Payload;
  renewal?: Payload;
  failed?: boolean;
};

const PAGE = 20;

/**
 * The App Store Server API on loopback, answering in the shapes of Apple's documentation and of
 * app-store-server-library's test resources: Get Transaction History v2 (pages of 20, revision),
 * Get All Subscription Statuses, Get Notification History (paginationToken), with every signed
 * field a JWS of the test CA. Requests must carry an ES256 bearer token of the key `keyFile()`
 * holds, for the bundle id. It can answer 429 with Retry-After, or 503, or slowly, and counts requests.
 * `notificationPageSize`: Get Notification History's page size (20 by default).
 */
export async function startAppleStoreMock(o: {
  ca: AppleTestCa;
  bundleId: string;
  environment?: 'Sandbox' | 'Production';
  signedAt?: () => number;
  notificationPageSize?: number;
}) {
  const environment = o.environment ?? 'Sandbox';
  const key = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const customers = new Map<string, MockTransaction[]>(); // any transaction id -> the customer's transactions (shared array)
  const statuses = new Map<string, MockStatus>(); // original transaction id -> state
  const notifications: MockNotification[] = [];
  const counts = { history: 0, statuses: 0, notifications: 0, limited: 0, failed: 0, unauthorized: 0 };
  let limitNext = 0;
  let retryAfterMs = 1000;
  let failNext = 0;
  let inFlight = 0;
  let maxInFlight = 0;
  /** Every request as it arrives (before any slowed answer), in order. */
  const received: { method: string; path: string; paginationToken: string | null }[] = [];
  /** The paginationToken of every Get Notification History request as it arrives, in order (null: the first page). */
  const notificationTokens: (string | null)[] = [];
  let slow: { ms: number; when: (r: { path: string; paginationToken: string | null }) => boolean } | undefined;
  const signedAt = o.signedAt ?? (() => Date.now());
  /** Set App Account Token's effect: by original transaction id, the token Apple's later data carries. */
  const accountTokens = new Map<string, string>();
  const sign = (payload: Payload) => {
    const token = accountTokens.get(String(payload.originalTransactionId));
    return signAppleJws(o.ca, {
      ...payload,
      ...(token ? { appAccountToken: token } : {}),
      bundleId: o.bundleId,
      environment,
      signedDate: payload.signedDate ?? signedAt(),
    });
  };

  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      const url = new URL(req.url ?? '/', 'http://localhost');
      const arrived = { method: req.method ?? 'GET', path: url.pathname, paginationToken: url.searchParams.get('paginationToken') };
      received.push(arrived);
      if (arrived.path === '/inApps/v1/notifications/history') notificationTokens.push(arrived.paginationToken);
      const extra = slow?.when(arrived) ? slow.ms : 0;
      // A few milliseconds of "network", so concurrency shows; unref'd: a slowed answer to a killed client keeps nothing open.
      setTimeout(() => {
        inFlight--;
        answer(req.method ?? 'GET', new URL(req.url ?? '/', 'http://localhost'), req.headers.authorization ?? '', body, (status, json, headers = {}) =>
          res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(json)),
        );
      }, 2 + extra).unref();
    });
  });

  function answer(
    method: string,
    url: URL,
    authorization: string,
    body: string,
    send: (status: number, json: unknown, headers?: Record<string, string>) => void,
  ): void {
    try {
      const claims = jwt.verify(/^Bearer (.+)$/.exec(authorization)?.[1] ?? '', key.publicKey, {
        algorithms: ['ES256'],
        audience: 'appstoreconnect-v1',
      }) as jwt.JwtPayload;
      if (claims.bid !== o.bundleId) throw new Error('bid');
    } catch {
      counts.unauthorized++;
      return send(401, { errorCode: 4010000, errorMessage: 'Unauthenticated' });
    }
    if (limitNext > 0) {
      limitNext--;
      counts.limited++;
      // "Identifying rate limits": Retry-After holds the UNIX time, in milliseconds, of the next allowed request
      return send(429, { errorCode: 4290000, errorMessage: 'Rate limit exceeded.' }, { 'retry-after': String(Date.now() + retryAfterMs) });
    }
    if (failNext > 0) {
      failNext--;
      counts.failed++;
      return send(503, { errorCode: 5000000, errorMessage: 'An unknown error occurred.' });
    }
    const accountToken = /^\/inApps\/v1\/transactions\/([^/]+)\/appAccountToken$/.exec(url.pathname);
    if (method === 'PUT' && accountToken) {
      // Set App Account Token (App Store Server API 1.16): 200 with no body; 400 InvalidAppAccountTokenUUIDError for a non-UUID.
      const token = (JSON.parse(body || '{}') as { appAccountToken?: unknown }).appAccountToken;
      if (typeof token !== 'string' || !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(token))
        return send(400, { errorCode: 4000183, errorMessage: 'Invalid request. The app account token field must be a valid UUID.' });
      const known = [...customers.values()].some((all) => all.some((t) => t.originalTransactionId === accountToken[1]));
      if (!known) return send(404, { errorCode: 4040010, errorMessage: 'Transaction id not found.' });
      accountTokens.set(accountToken[1], token);
      return send(200, {});
    }
    const history = /^\/inApps\/v2\/history\/([^/]+)$/.exec(url.pathname);
    const subs = /^\/inApps\/v1\/subscriptions\/([^/]+)$/.exec(url.pathname);
    if (method === 'GET' && history) {
      counts.history++;
      const all = customers.get(history[1]);
      if (!all) return send(404, { errorCode: 4040010, errorMessage: 'Transaction id not found.' });
      const sorted = [...all].sort((a, b) => a.purchaseDate - b.purchaseDate || a.transactionId.localeCompare(b.transactionId));
      const from = Number(url.searchParams.get('revision') ?? '0');
      const page = sorted.slice(from, from + PAGE);
      return send(200, {
        revision: String(from + page.length),
        hasMore: from + page.length < sorted.length,
        bundleId: o.bundleId,
        environment,
        signedTransactions: page.map(sign),
      });
    }
    if (method === 'GET' && subs) {
      counts.statuses++;
      const all = customers.get(subs[1]);
      if (!all) return send(404, { errorCode: 4040010, errorMessage: 'Transaction id not found.' });
      const latest = new Map<string, MockTransaction>();
      for (const t of all)
        if (t.expiresDate !== undefined && (!latest.has(t.originalTransactionId) || latest.get(t.originalTransactionId)!.purchaseDate < t.purchaseDate))
          latest.set(t.originalTransactionId, t);
      const lastTransactions = [...latest.values()].map((t) => {
        const state = statuses.get(t.originalTransactionId) ?? { status: 1, renewal: { autoRenewStatus: 1 } };
        return {
          status: state.status,
          originalTransactionId: t.originalTransactionId,
          signedTransactionInfo: sign(t),
          signedRenewalInfo: sign({
            originalTransactionId: t.originalTransactionId,
            productId: t.productId,
            autoRenewProductId: t.productId,
            ...state.renewal,
          }),
        };
      });
      return send(200, {
        environment,
        bundleId: o.bundleId,
        data: lastTransactions.length ? [{ subscriptionGroupIdentifier: 'group-1', lastTransactions }] : [],
      });
    }
    if (method === 'POST' && url.pathname === '/inApps/v1/notifications/history') {
      counts.notifications++;
      const q = JSON.parse(body || '{}') as { startDate?: number; endDate?: number; onlyFailures?: boolean };
      const matching = notifications.filter(
        (n) => n.signedDate >= (q.startDate ?? 0) && n.signedDate <= (q.endDate ?? Infinity) && (!q.onlyFailures || n.failed),
      );
      const from = Number(url.searchParams.get('paginationToken') ?? '0');
      const page = matching.slice(from, from + (o.notificationPageSize ?? PAGE));
      return send(200, {
        notificationHistory: page.map((n) => ({
          signedPayload: signNotification(n),
          sendAttempts: [{ attemptDate: n.signedDate, sendAttemptResult: n.failed ? 'NO_RESPONSE' : 'SUCCESS' }],
        })),
        hasMore: from + page.length < matching.length,
        ...(from + page.length < matching.length ? { paginationToken: String(from + page.length) } : {}),
      });
    }
    send(404, { errorCode: 4040000, errorMessage: 'Not found' });
  }

  /** The notification as Apple signs it (ResponseBodyV2DecodedPayload), with its transaction and renewal info signed at its signedDate. */
  function signNotification(n: MockNotification): string {
    const data: Payload = { bundleId: o.bundleId, bundleVersion: '1.0', environment, status: 1 };
    if (n.transaction) data.signedTransactionInfo = sign({ ...n.transaction, signedDate: n.signedDate });
    if (n.renewal) data.signedRenewalInfo = sign({ ...n.renewal, signedDate: n.signedDate });
    return signAppleJws(o.ca, {
      notificationType: n.notificationType,
      ...(n.subtype ? { subtype: n.subtype } : {}),
      notificationUUID: n.notificationUUID,
      version: '2.0',
      signedDate: n.signedDate,
      data,
    });
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    base,
    counts,
    received,
    accountTokens,
    notificationTokens,
    maxInFlight: () => maxInFlight,
    /** The In-App Purchase key (.p8, PKCS #8 PEM) the mock accepts bearer tokens of. */
    privateKeyPem: key.privateKey.export({ format: 'pem', type: 'pkcs8' }) as string,
    /** A customer: transactions of one or more chains; any of their ids finds all of them. */
    addCustomer(transactions: MockTransaction[]): void {
      const shared = [...transactions];
      for (const t of transactions) customers.set(t.transactionId, shared);
    },
    /** A new transaction of an existing customer (a renewal), found by any id of theirs. */
    addTransaction(anyId: string, t: MockTransaction): void {
      const shared = customers.get(anyId)!;
      shared.push(t);
      customers.set(t.transactionId, shared);
    },
    setStatus(originalTransactionId: string, state: MockStatus): void {
      statuses.set(originalTransactionId, state);
    },
    addNotification(n: MockNotification): void {
      notifications.push(n);
    },
    signNotification,
    rateLimitNext(n: number, waitMs = 1000): void {
      limitNext = n;
      retryAfterMs = waitMs;
    },
    failNext(n: number): void {
      failNext = n;
    },
    /** Answers `ms` later than usual: every request, or those `when` picks (by path and paginationToken); slowDown(0) ends it. */
    slowDown(ms: number, when: (r: { path: string; paginationToken: string | null }) => boolean = () => true): void {
      slow = ms > 0 ? { ms, when } : undefined;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export type AppleStoreMock = Awaited<ReturnType<typeof startAppleStoreMock>>;
