import { jest } from '@jest/globals';
import { once } from 'node:events';
import { chmodSync, existsSync, mkdtempSync, readFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePorts } from '../kafka/broker.mjs';
import { expectEventually } from '../utils/expect-eventually.js';
import { runCli, startService, type ServiceProcess } from '../utils/processes.js';

// The embedded PostgreSQL has one owner, the service: the CLI attaches and never starts or stops it;
// the service brings it back when it dies, adopts one a crashed service left behind, and stops it
// on its way out.

jest.setTimeout(240_000);

const postmasterPid = (dataDir: string): number | undefined => {
  const file = path.join(dataDir, 'pg', 'postmaster.pid');
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
  return Number.isInteger(pid) ? pid : undefined;
};
const alive = (pid: number | undefined) => {
  if (pid === undefined) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('the embedded PostgreSQL, the service and the CLI (e2e, separate processes)', () => {
  let dataDir: string;
  let env: Record<string, string | undefined>;
  let base: string;
  let service: ServiceProcess | undefined;

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'sr-epg-'));
    chmodSync(dataDir, 0o755);
    const [port, pgPort] = await freePorts(2);
    base = `http://127.0.0.1:${port}`;
    env = { PORT: String(port), DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(pgPort), JWT_SECRET: undefined, NODE_ENV: 'development', LOG_LEVEL: 'info' };
  });
  afterAll(async () => {
    await service?.kill('SIGTERM');
  });

  const startAndWait = async () => {
    service = startService(env);
    await expectEventually(async () => expect((await fetch(`${base}/health/ready`)).status).toBe(200), 90_000, 250);
    return service;
  };

  it('the CLI does not start a server for the service: it says to start the service', async () => {
    const result = await runCli(['publish', 'examples/events.ndjson'], { DATA_DIR: dataDir, JWT_SECRET: undefined });
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n')).toEqual([`error: no embedded PostgreSQL is running for DATA_DIR ${dataDir}: start the service first (npm start), or set DATABASE_URL`]);
    expect(postmasterPid(dataDir)).toBeUndefined();
  });

  it('the CLI attaches to the service\'s server and leaves it running when it exits', async () => {
    await startAndWait();
    expect(readFileSync(path.join(dataDir, 'pg-password'), 'utf8').trim()).not.toBe('postgres');
    const result = await runCli(['publish', 'examples/events.ndjson'], { DATA_DIR: dataDir, JWT_SECRET: undefined });
    expect(result.code).toBe(0);
    expect(alive(postmasterPid(dataDir))).toBe(true);
    for (let i = 0; i < 5; i++) {
      expect((await fetch(`${base}/health/ready`)).status).toBe(200);
      await new Promise((r) => setTimeout(r, 300));
    }
  });

  it('a killed embedded PostgreSQL is brought back; readiness says so meanwhile, liveness stays up', async () => {
    const pid = postmasterPid(dataDir)!;
    process.kill(pid, 'SIGKILL');
    await expectEventually(async () => {
      const res = await fetch(`${base}/health/ready`);
      expect(res.status).toBe(503);
    }, 20_000, 100);
    expect((await fetch(`${base}/health/live`)).status).toBe(200);
    await expectEventually(async () => expect((await fetch(`${base}/health/ready`)).status).toBe(200), 60_000, 250);
    expect(postmasterPid(dataDir)).not.toBe(pid);
    expect(service!.output()).toContain('embedded PostgreSQL died; restart 1 of 5');
  });

  it('a server left behind by a crashed service is adopted, and stopped with the service that adopted it', async () => {
    await service!.kill('SIGKILL');
    const orphan = postmasterPid(dataDir);
    expect(alive(orphan)).toBe(true);
    await startAndWait();
    expect(service!.output()).toContain('adopting embedded PostgreSQL left running');
    expect(await service!.kill('SIGTERM')).toBe(0);
    service = undefined;
    await expectEventually(async () => expect(alive(orphan)).toBe(false), 30_000, 200);
  });
});

describe('a failed start (e2e, separate process)', () => {
  it('the HTTP port already in use: the service exits and stops the embedded PostgreSQL it started', async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'sr-busy-'));
    chmodSync(dataDir, 0o755);
    const [port, pgPort] = await freePorts(2);
    const squatter = net.createServer().listen(port, '0.0.0.0');
    await once(squatter, 'listening');
    try {
      const service = startService({ PORT: String(port), DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(pgPort), JWT_SECRET: undefined, NODE_ENV: 'development' });
      expect(await service.exited).toBe(1);
      expect(service.output()).toContain(`error: the HTTP port ${port} is already in use on 0.0.0.0: stop what listens there or set PORT`);
      expect(service.output()).not.toMatch(/\n\s+at /);
      // it got as far as starting the server (the database is opened before the port is taken) ...
      expect(existsSync(path.join(dataDir, 'pg', 'PG_VERSION'))).toBe(true);
      // ... and no postmaster outlives it
      const pid = postmasterPid(dataDir);
      expect(pid === undefined || !alive(pid)).toBe(true);
      const outcome = await new Promise((resolve) => {
        const probe = net.connect(pgPort, '127.0.0.1');
        probe.once('connect', () => (probe.destroy(), resolve('connected'))).once('error', () => resolve('refused'));
      });
      expect(outcome).toBe('refused');
    } finally {
      squatter.close();
    }
  });
});

describe('as root, a DATA_DIR the postgres user cannot enter (e2e, separate process)', () => {
  const asRoot = process.getuid?.() === 0 ? it : it.skip;
  asRoot('stops with one line saying what to do, not a stack', async () => {
    const privateDir = mkdtempSync(path.join(os.tmpdir(), 'sr-private-')); // mode 0700, owned by root
    const [port, pgPort] = await freePorts(2);
    const service = startService({ PORT: String(port), DATA_DIR: path.join(privateDir, 'data'), EMBEDDED_PG_PORT: String(pgPort), JWT_SECRET: undefined, NODE_ENV: 'development' });
    expect(await service.exited).toBe(1);
    const lines = service.output().trim().split('\n').filter((l) => l.startsWith('error:'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('as root it runs as the `postgres` user');
    expect(service.output()).not.toMatch(/\n\s+at /);
  });
});

describe('production settings (e2e, separate process)', () => {
  it('refuses the embedded PostgreSQL and log with a misspelt KAFKA_BROKER, naming what to set', async () => {
    const service = startService({ NODE_ENV: 'production', JWT_SECRET: 'q8vN2LmRt5XwZ0pKc7HyB3sJf9DgA4eU', KAFKA_BROKER: '127.0.0.1:9092', DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'sr-prod-')) });
    expect(await service.exited).toBe(78);
    expect(service.output()).toContain('DATABASE_URL must be set when NODE_ENV=production');
    expect(service.output()).toContain('KAFKA_BROKERS must be set when NODE_ENV=production');
  });
});
