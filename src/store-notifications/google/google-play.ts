import { androidpublisher, type androidpublisher_v3 } from '@googleapis/androidpublisher';
import { JWT } from 'google-auth-library';
import jwt from 'jsonwebtoken';
import { createPublicKey, type KeyObject } from 'node:crypto';
import type { GoogleSettings } from '../../config/app-config.js';

const SCOPE = 'https://www.googleapis.com/auth/androidpublisher';

export type FetchFailure = { kind: 'unknown' | 'unavailable'; status?: number; message: string };

/** The Play Developer API, as the configured service account, at the configured base URL. */
export class GooglePlayApi {
  private readonly api: androidpublisher_v3.Androidpublisher;

  constructor(settings: GoogleSettings) {
    const auth = new JWT({
      email: settings.serviceAccount.email,
      key: settings.serviceAccount.privateKey,
      keyId: settings.serviceAccount.keyId,
      scopes: [SCOPE],
    });
    // A JWT signed with the service account's key, sent as the bearer token (no token exchange).
    auth.useJWTAccessWithScope = settings.selfSignedJwt;
    this.api = androidpublisher({ version: 'v3', auth, rootUrl: settings.apiBaseUrl, retry: false, timeout: 10_000 });
  }

  async subscription(packageName: string, token: string): Promise<androidpublisher_v3.Schema$SubscriptionPurchaseV2> {
    return (await this.api.purchases.subscriptionsv2.get({ packageName, token })).data;
  }

  async product(packageName: string, productId: string, token: string): Promise<androidpublisher_v3.Schema$ProductPurchase> {
    return (await this.api.purchases.products.get({ packageName, productId, token })).data;
  }

  /**
   * One page of voidedpurchases.list (type 1: subscriptions too; quantity-based partial refunds too,
   * with their voidedQuantity); imports and the refund poller read it. Google ignores startTime
   * beside a page token.
   */
  async voidedPurchases(
    packageName: string,
    page: { startTime?: number; token?: string; maxResults?: number },
  ): Promise<androidpublisher_v3.Schema$VoidedPurchasesListResponse> {
    const params = {
      packageName,
      type: 1,
      includeQuantityBasedPartialRefund: true,
      maxResults: page.maxResults,
      ...(page.token ? { token: page.token } : { startTime: page.startTime === undefined ? undefined : String(page.startTime) }),
    };
    return (await this.api.purchases.voidedpurchases.list(params)).data;
  }
}

/**
 * A purchase Google does not know (404, 410, a 400 about the token) will never be fetched: retrying
 * cannot help. Anything else (our credentials refused, quota, 5xx, network) may pass later.
 */
export function classifyFetchError(error: unknown): FetchFailure {
  const e = error as { status?: number; response?: { status?: number }; message?: string };
  const status = e.status ?? e.response?.status;
  const message = e.message ?? String(error);
  if (status === 400 || status === 404 || status === 410) return { kind: 'unknown', status, message };
  return { kind: 'unavailable', status, message };
}

/** A JWKS fetched at most every REFRESH_MIN_MS, also when a token names an unknown key. */
const REFRESH_MIN_MS = 5_000;
const REFRESH_MAX_AGE_MS = 3_600_000;

/**
 * Verifies the OIDC token Pub/Sub puts on each push: signature against the JWKS, issuer, audience,
 * email. Node imports the JWKs itself (createPublicKey with format 'jwk'); jwks-rsa, used for the
 * API's bearer tokens, cannot be loaded in-process by the test runner (it require()s the ESM-only
 * jose), and these tests run in-process against the Play API mock.
 */
export class PubSubTokenVerifier {
  private keys = new Map<string, KeyObject>();
  private fetchedAt = 0;
  private inflight?: Promise<void>;

  constructor(private readonly settings: GoogleSettings['pubsub']) {}

  /**
   * Returns why the token is refused, or undefined when it is good. `reason` is ours or the JWT
   * library's verdict ("jwt expired", "invalid signature"); `cause` is any other error, for the log.
   */
  async refuse(token: string): Promise<{ reason: string; cause?: unknown } | undefined> {
    const decoded = jwt.decode(token, { complete: true });
    if (!decoded || typeof decoded.payload === 'string') return { reason: 'the bearer token is not a JWT' };
    const kid = decoded.header.kid ?? '';
    let key = this.keys.get(kid);
    if (!key || Date.now() - this.fetchedAt > REFRESH_MAX_AGE_MS) {
      if (Date.now() - this.fetchedAt >= REFRESH_MIN_MS) {
        try {
          await this.refresh();
        } catch (error) {
          return { reason: 'the keys at GOOGLE_PUBSUB_JWKS_URI could not be fetched', cause: error };
        }
      }
      key = this.keys.get(kid);
    }
    if (!key) return { reason: `no key ${JSON.stringify(kid)} at GOOGLE_PUBSUB_JWKS_URI` };
    let claims: jwt.JwtPayload;
    try {
      claims = jwt.verify(token, key, {
        algorithms: ['RS256'],
        issuer: [...this.settings.issuers] as [string, ...string[]],
        audience: this.settings.audience,
      }) as jwt.JwtPayload;
    } catch (error) {
      // JsonWebTokenError (TokenExpiredError, NotBeforeError) messages are verdicts; anything else is internal.
      return error instanceof jwt.JsonWebTokenError ? { reason: error.message } : { reason: 'the token could not be verified', cause: error };
    }
    if (this.settings.serviceAccount && (claims.email !== this.settings.serviceAccount || claims.email_verified !== true)) {
      return { reason: `the token is not from ${this.settings.serviceAccount} (GOOGLE_PUBSUB_SERVICE_ACCOUNT)` };
    }
    return undefined;
  }

  private refresh(): Promise<void> {
    this.inflight ??= (async () => {
      try {
        const res = await fetch(this.settings.jwksUri, { signal: AbortSignal.timeout(5000) });
        if (!res.ok) throw new Error(`HTTP ${res.status}`);
        const { keys } = (await res.json()) as { keys?: (Record<string, unknown> & { kid?: string })[] };
        this.keys = new Map((keys ?? []).filter((k) => k.kty === 'RSA').map((k) => [k.kid ?? '', createPublicKey({ key: k, format: 'jwk' })]));
      } finally {
        this.fetchedAt = Date.now();
        this.inflight = undefined;
      }
    })();
    return this.inflight;
  }
}
