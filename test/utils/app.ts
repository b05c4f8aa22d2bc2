import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { ModuleMetadata } from '@nestjs/common';
import { mintToken } from '../../src/auth/mint-token.js';
import type { Clock } from '../../src/common/clock.js';
import { createPino } from '../../src/common/logger.js';
import { loadConfig, type AppConfig } from '../../src/config/app-config.js';
import { ReadReplicas } from '../../src/database/read-replicas.js';
import { createHttpApp } from '../../src/http-app.js';
import { standbyReadsFor } from './replicas.js';

export const TEST_SECRET = 'test-secret-that-is-long-enough-for-hs256!!';

export type TestApp = {
  app: NestFastifyApplication;
  baseUrl: string;
  config: AppConfig;
  token(appId: string, scopes?: string[], extra?: { ttlSeconds?: number }): string;
  get(path: string, token?: string): Promise<{ status: number; body: any; headers: Headers }>;
  close(): Promise<void>;
};

/** The real HTTP application on an ephemeral port, against the given database. */
export async function startTestApp(o: {
  databaseUrl: string;
  env?: Record<string, string>;
  extraImports?: ModuleMetadata['imports'];
  clock?: Clock;
}): Promise<TestApp> {
  // Under TEST_READS=standby (test/utils/replicas.ts) the reads go to the database's standbys.
  const standbys = standbyReadsFor(o.databaseUrl);
  const config = loadConfig({
    NODE_ENV: 'test',
    DATABASE_URL: o.databaseUrl,
    JWT_SECRET: TEST_SECRET,
    LOG_LEVEL: 'silent',
    CONSUMER_ENABLED: 'false',
    // The UI's static files come through @fastify/static, which require()s an ESM-only module that
    // jest cannot load on Node 20; /docs is tested against the built server (service.e2e-spec.ts).
    DOCS_UI_ENABLED: 'false',
    ...(standbys ? { DATABASE_READ_URL: standbys.urls.join(',') } : {}),
    ...o.env,
  });
  const app = await createHttpApp({
    config,
    database: { url: o.databaseUrl, mode: 'external', stop: async () => undefined },
    pino: createPino(process.env.TEST_LOG_LEVEL ?? 'silent'),
    extraImports: o.extraImports,
    clock: o.clock,
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  // Reads from the standbys, not the primary's fallback: a standby out of rotation would make the run prove nothing.
  if (
    standbys &&
    !app
      .get(ReadReplicas)
      .replicas()
      .every((r) => r.inRotation)
  ) {
    await app.close();
    throw new Error(`TEST_READS=standby: not every standby takes reads: ${JSON.stringify(app.get(ReadReplicas).replicas())}`);
  }
  const address = app.getHttpServer().address() as { port: number };
  const baseUrl = `http://127.0.0.1:${address.port}`;
  return {
    app,
    baseUrl,
    config,
    token: (appId, scopes = ['customers:read', 'transactions:read'], extra = {}) =>
      mintToken({
        secret: config.jwt.secret ?? TEST_SECRET,
        appId,
        scopes,
        ttlSeconds: extra.ttlSeconds ?? 600,
        issuer: config.jwt.issuer,
        audience: config.jwt.audience,
      }),
    async get(path, token) {
      await standbys?.caughtUp();
      const response = await fetch(baseUrl + path, { headers: token ? { authorization: `Bearer ${token}` } : {} });
      const text = await response.text();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // not JSON (docs page)
      }
      return { status: response.status, body, headers: response.headers };
    },
    close: () => app.close(),
  };
}
