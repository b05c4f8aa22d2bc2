import { generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import jwt from 'jsonwebtoken';

/**
 * Google's side, on loopback: the JWKS Pub/Sub's OIDC tokens are checked against, and the Play
 * Developer API answering purchases.subscriptionsv2.get and purchases.products.get with documented
 * shapes. API calls must carry a JWT signed by the test service account with the androidpublisher
 * scope, as the service sends them with GOOGLE_API_SELF_SIGNED_JWT.
 */
export async function startGooglePlayMock() {
  const pubsubKey = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pubsubKid = randomUUID();
  const account = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const subscriptions = new Map<string, unknown>();
  const products = new Map<string, unknown>();
  const calls: string[] = [];
  let failNext = 0;

  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const send = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (url.pathname === '/certs') return send(200, { keys: [{ ...pubsubKey.publicKey.export({ format: 'jwk' }), kid: pubsubKid, alg: 'RS256', use: 'sig' }] });
    calls.push(`${req.method} ${url.pathname}`);
    try {
      const claims = jwt.verify(/^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '', account.publicKey as KeyObject, { algorithms: ['RS256'] }) as jwt.JwtPayload;
      if (!String(claims.scope).includes('https://www.googleapis.com/auth/androidpublisher')) throw new Error('no androidpublisher scope');
    } catch (error) {
      return send(401, { error: { code: 401, message: `Request had invalid authentication credentials: ${(error as Error).message}`, status: 'UNAUTHENTICATED' } });
    }
    if (failNext > 0) {
      failNext--;
      return send(503, { error: { code: 503, message: 'The service is currently unavailable.', status: 'UNAVAILABLE' } });
    }
    const sub = /^\/androidpublisher\/v3\/applications\/([^/]+)\/purchases\/subscriptionsv2\/tokens\/([^/]+)$/.exec(url.pathname);
    const product = /^\/androidpublisher\/v3\/applications\/([^/]+)\/purchases\/products\/([^/]+)\/tokens\/([^/]+)$/.exec(url.pathname);
    const found = sub ? subscriptions.get(`${sub[1]}/${decodeURIComponent(sub[2])}`) : product ? products.get(`${product[1]}/${product[2]}/${decodeURIComponent(product[3])}`) : undefined;
    if (found === undefined) return send(404, { error: { code: 404, message: 'The purchase token was not found.', status: 'NOT_FOUND' } });
    send(200, found);
  });
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

