import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import jwt from 'jsonwebtoken';
import { freePort } from '../kafka/broker.mjs';
import { TEST_SECRET } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { expectEventually } from '../utils/expect-eventually.js';
import { startService, type ServiceProcess } from '../utils/processes.js';

// RS256/ES256 through JWT_JWKS_URI (jwks-rsa), against the built server: jwks-rsa loads the ESM-only
// `jose`, which only Node itself (not jest's module loader on Node 20) can require.
describe('bearer tokens verified against a JWKS (e2e, separate process)', () => {
  let db: TestDatabase;
  let jwks: http.Server;
  let service: ServiceProcess;
  let base: string;
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = (key: KeyObject, kid: string, alg: string) => ({ ...key.export({ format: 'jwk' }), kid, alg, use: 'sig' });
  let rotated: ReturnType<typeof generateKeyPairSync> | undefined;
  let jwksFetches = 0;

  beforeAll(async () => {
    db = await createTestDatabase('jwks');
    jwks = http.createServer((_, res) => {
      jwksFetches++;
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          keys: [jwk(rsa.publicKey, 'rsa-1', 'RS256'), jwk(ec.publicKey, 'ec-1', 'ES256'), ...(rotated ? [jwk(rotated.publicKey, 'rsa-2', 'RS256')] : [])],
        }),
      );
    });
    await new Promise<void>((r) => jwks.listen(0, '127.0.0.1', r));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    service = startService({
      PORT: String(port),
      DATABASE_URL: db.url,
      JWT_SECRET: undefined,
      JWT_JWKS_URI: `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/.well-known/jwks.json`,
      JWT_ISSUER: 'https://issuer.test',
      JWT_AUDIENCE: 'subscription-records',
      CONSUMER_ENABLED: 'false',
    });
    await expectEventually(async () => expect((await fetch(`${base}/health/live`)).status).toBe(200), 60_000, 250);
  }, 90_000);

  afterAll(async () => {
    await service?.kill('SIGTERM');
    jwks?.close();
    await db?.drop();
  });

  const claims = { app: 'app-1', scope: 'transactions:read' };
  const good = { issuer: 'https://issuer.test', audience: 'subscription-records', expiresIn: 60 };
  const call = (token: string) => fetch(`${base}/v2/transactions`, { headers: { authorization: `Bearer ${token}` } });

  it('accepts RS256 and ES256 tokens signed by keys in the JWKS', async () => {
    expect((await call(jwt.sign(claims, rsa.privateKey, { ...good, algorithm: 'RS256', keyid: 'rsa-1' }))).status).toBe(200);
    expect((await call(jwt.sign(claims, ec.privateKey, { ...good, algorithm: 'ES256', keyid: 'ec-1' }))).status).toBe(200);
  });

  it('checks issuer and audience when configured', async () => {
    expect((await call(jwt.sign(claims, rsa.privateKey, { ...good, issuer: 'https://evil.test', algorithm: 'RS256', keyid: 'rsa-1' }))).status).toBe(401);
    expect((await call(jwt.sign(claims, rsa.privateKey, { ...good, audience: 'someone-else', algorithm: 'RS256', keyid: 'rsa-1' }))).status).toBe(401);
  });

  it('tokens with made-up kids cannot starve a real key rotation', async () => {
    const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const before = jwksFetches;
    for (let i = 0; i < 40; i++) {
      expect((await call(jwt.sign(claims, stranger.privateKey, { ...good, algorithm: 'RS256', keyid: `random-${i}` }))).status).toBe(401);
    }
    expect(jwksFetches - before).toBeLessThanOrEqual(2);
    rotated = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const token = jwt.sign(claims, rotated.privateKey, { ...good, algorithm: 'RS256', keyid: 'rsa-2' });
    await expectEventually(async () => expect((await call(token)).status).toBe(200), 15_000, 500);
  });

  it('refuses keys not in the JWKS and HS256 when no secret is configured', async () => {
    const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 });
    expect((await call(jwt.sign(claims, stranger.privateKey, { ...good, algorithm: 'RS256', keyid: 'rsa-1' }))).status).toBe(401);
    expect((await call(jwt.sign(claims, TEST_SECRET, { ...good, algorithm: 'HS256' }))).status).toBe(401);
  });
});

describe('a JWKS endpoint that does not answer (e2e, separate process)', () => {
  let db: TestDatabase;
  let service: ServiceProcess;
  let base: string;
  let jwksPort: number;

  beforeAll(async () => {
    db = await createTestDatabase('jwks_down');
    const [port, closed] = [await freePort(), await freePort()];
    jwksPort = closed;
    base = `http://127.0.0.1:${port}`;
    service = startService({
      PORT: String(port),
      DATABASE_URL: db.url,
      JWT_SECRET: undefined,
      JWT_JWKS_URI: `http://127.0.0.1:${closed}/jwks.json`,
      CONSUMER_ENABLED: 'false',
      LOG_LEVEL: 'warn',
    });
    await expectEventually(async () => expect((await fetch(`${base}/health/live`)).status).toBe(200), 60_000, 250);
  }, 90_000);
  afterAll(async () => {
    await service?.kill('SIGTERM');
    await db?.drop();
  });

  it('answers 401 without the fetch error (hosts and ports of the service network), and logs it', async () => {
    const key = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const response = await fetch(`${base}/v2/transactions`, {
      headers: {
        authorization: `Bearer ${jwt.sign({ app: 'app-1', scope: 'transactions:read' }, key.privateKey, { algorithm: 'RS256', keyid: 'k1', expiresIn: 60 })}`,
      },
    });
    const text = await response.text();
    expect(response.status).toBe(401);
    expect(JSON.parse(text)).toMatchObject({ code: 'token_invalid', detail: 'The bearer token could not be verified.' });
    expect(text).not.toContain(String(jwksPort));
    await expectEventually(async () => expect(service.output()).toMatch(/a bearer token could not be verified: .*ECONNREFUSED/), 5_000, 100);
  });
});

describe('configuration checked at boot (separate process)', () => {
  it('refuses to start in production without JWT_SECRET or JWT_JWKS_URI', async () => {
    const service = startService({ NODE_ENV: 'production', JWT_SECRET: undefined, DATABASE_URL: 'postgres://127.0.0.1:1/none' });
    expect(await service.exited).toBe(78);
    expect(service.output()).toContain('JWT_SECRET or JWT_JWKS_URI must be set when NODE_ENV=production');
  });

  it('names each invalid variable and exits 78', async () => {
    const service = startService({ PORT: 'http', LOG_LEVEL: 'chatty', DATABASE_URL: 'mysql://x' });
    expect(await service.exited).toBe(78);
    for (const name of ['PORT', 'LOG_LEVEL', 'DATABASE_URL']) expect(service.output()).toContain(name);
  });
});
