import { chmodSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePorts } from '../kafka/broker.mjs';
import { expectEventually } from '../utils/expect-eventually.js';
import { runCli, startService, type ServiceProcess } from '../utils/processes.js';

// The built service as users run it (`node dist/main.js`, what `npm start` runs after building),
// on embedded defaults: no DATABASE_URL, no Kafka, no JWT secret.
describe('the service on embedded defaults (e2e, separate process)', () => {
  let service: ServiceProcess;
  let base: string;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'sr-svc-'));
    chmodSync(dataDir, 0o755);
    const [port, pgPort] = await freePorts(2);
    base = `http://127.0.0.1:${port}`;
    service = startService({
      PORT: String(port),
      DATA_DIR: dataDir,
      EMBEDDED_PG_PORT: String(pgPort),
      JWT_SECRET: undefined,
      LOG_LEVEL: 'info',
      NODE_ENV: 'development',
    });
    await expectEventually(async () => expect((await fetch(`${base}/health/ready`)).status).toBe(200), 60_000, 250);
  }, 90_000);

  afterAll(async () => {
    const code = await service?.kill('SIGTERM');
    expect(code).toBe(0);
  });

  it('says at start-up how to mint a token with the generated secret', () => {
    expect(service.output()).toContain('npm run cli -- token --app');
    expect(service.output()).toContain(path.join(dataDir, 'jwt-secret'));
  });

  it('serves the Swagger UI at /docs', async () => {
    const res = await fetch(`${base}/docs`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('swagger-ui');
  });

  it('ingests what the CLI publishes and serves it to a token the CLI mints', async () => {
    const env = { DATA_DIR: dataDir, JWT_SECRET: undefined, NODE_ENV: 'development' };
    const published = await runCli(['publish', 'examples/events.ndjson'], env);
    expect(published.code).toBe(0);
    const minted = await runCli(['token', '--app', 'demo-app', '--scope', 'customers:read', '--ttl', '10m'], env);
    expect(minted.code).toBe(0);
    const token = minted.stdout.trim();
    await expectEventually(async () => {
      const res = await fetch(`${base}/v2/customers`, { headers: { authorization: `Bearer ${token}` } });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { paging: { total: number } }).paging.total).toBe(9);
    });
    const noScope = await fetch(`${base}/v2/transactions`, { headers: { authorization: `Bearer ${token}` } });
    expect(noScope.status).toBe(403);
  });

  it('does not log bearer tokens', () => {
    expect(service.output()).not.toMatch(/eyJ[\w-]+\.eyJ/);
  });
});
