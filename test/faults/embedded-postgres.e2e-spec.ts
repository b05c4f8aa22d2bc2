import { jest } from '@jest/globals';
import { once } from 'node:events';
import { spawn, execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, renameSync, writeFileSync } from 'node:fs';
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

/** Processes whose command line names this directory or whose working directory is in it (postgres chdirs into its data dir). */
const postgresProcessesOf = (dataDir: string): string[] => {
  if (process.platform !== 'linux') return []; // the tests that look (and clean up) this way run on Linux
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
        if (cmdline.includes('postgres') && cmdline.includes(dataDir)) return true;
        return readlinkSync(`/proc/${pid}/cwd`).startsWith(dataDir);
      } catch {
        return false; // gone meanwhile
      }
    });
};

/**
 * What a test started and must not outlive it when it fails half-way: the services it started, then
 * any PostgreSQL of a data directory it used (a regression that leaves a server running would
 * otherwise leave it running for good).
 */
const leftovers = { services: new Set<ServiceProcess>(), dataDirs: new Set<string>() };
const track = (service: ServiceProcess) => (leftovers.services.add(service), service);
const useDataDir = <T extends string>(dataDir: T) => (leftovers.dataDirs.add(dataDir), dataDir);
const cleanUp = async () => {
  for (const service of leftovers.services) await service.kill('SIGKILL');
  for (const dataDir of leftovers.dataDirs) {
    for (const pid of postgresProcessesOf(dataDir)) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
  }
  leftovers.services.clear();
  leftovers.dataDirs.clear();
};

describe('the embedded PostgreSQL, the service and the CLI (e2e, separate processes)', () => {
  let dataDir: string;
  let env: Record<string, string | undefined>;
  let base: string;
  let service: ServiceProcess | undefined;

  beforeAll(async () => {
    dataDir = useDataDir(mkdtempSync(path.join(os.tmpdir(), 'sr-epg-')));
    chmodSync(dataDir, 0o755);
    const [port, pgPort] = await freePorts(2);
    base = `http://127.0.0.1:${port}`;
    env = { PORT: String(port), DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(pgPort), JWT_SECRET: undefined, NODE_ENV: 'development', LOG_LEVEL: 'info' };
  });
  afterAll(async () => {
    await service?.kill('SIGTERM');
    await cleanUp();
  });

  const startAndWait = async () => {
    service = track(startService(env));
    await expectEventually(async () => expect((await fetch(`${base}/health/ready`)).status).toBe(200), 90_000, 250);
    return service;
  };

  it('the CLI does not start a server for the service: it says to start the service', async () => {
    const result = await runCli(['publish', 'examples/events.ndjson'], { DATA_DIR: dataDir, JWT_SECRET: undefined });
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n')).toEqual([
      `error: no embedded PostgreSQL is running for DATA_DIR ${dataDir}: start the service first (npm start), or set DATABASE_URL`,
    ]);
    expect(postmasterPid(dataDir)).toBeUndefined();
  });

  it("the CLI attaches to the service's server and leaves it running when it exits", async () => {
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
    await expectEventually(
      async () => {
        const res = await fetch(`${base}/health/ready`);
        expect(res.status).toBe(503);
      },
      20_000,
      100,
    );
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
  afterEach(cleanUp);

  it('the HTTP port already in use: the service exits and stops the embedded PostgreSQL it started', async () => {
    const dataDir = useDataDir(mkdtempSync(path.join(os.tmpdir(), 'sr-busy-')));
    chmodSync(dataDir, 0o755);
    const [port, pgPort] = await freePorts(2);
    const squatter = net.createServer().listen(port, '0.0.0.0');
    await once(squatter, 'listening');
    try {
      const service = track(
        startService({ PORT: String(port), DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(pgPort), JWT_SECRET: undefined, NODE_ENV: 'development' }),
      );
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
  afterEach(cleanUp);

  const asRoot = process.getuid?.() === 0 ? it : it.skip;
  asRoot('stops with one line saying what to do, not a stack', async () => {
    const privateDir = mkdtempSync(path.join(os.tmpdir(), 'sr-private-')); // mode 0700, owned by root
    const [port, pgPort] = await freePorts(2);
    const service = track(
      startService({
        PORT: String(port),
        DATA_DIR: useDataDir(path.join(privateDir, 'data')),
        EMBEDDED_PG_PORT: String(pgPort),
        JWT_SECRET: undefined,
        NODE_ENV: 'development',
      }),
    );
    expect(await service.exited).toBe(1);
    const lines = service
      .output()
      .trim()
      .split('\n')
      .filter((l) => l.startsWith('error:'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('as root it runs as the `postgres` user');
    expect(service.output()).not.toMatch(/\n\s+at /);
  });
});

describe('production settings (e2e, separate process)', () => {
  afterEach(cleanUp);

  it('refuses the embedded PostgreSQL and log with a misspelt KAFKA_BROKER, naming what to set', async () => {
    const service = track(
      startService({
        NODE_ENV: 'production',
        JWT_SECRET: 'q8vN2LmRt5XwZ0pKc7HyB3sJf9DgA4eU',
        KAFKA_BROKER: '127.0.0.1:9092',
        DATA_DIR: useDataDir(mkdtempSync(path.join(os.tmpdir(), 'sr-prod-'))),
      }),
    );
    expect(await service.exited).toBe(78);
    expect(service.output()).toContain('DATABASE_URL must be set when NODE_ENV=production');
    expect(service.output()).toContain('KAFKA_BROKERS must be set when NODE_ENV=production');
  });
});

describe('a damaged data directory (e2e, separate processes)', () => {
  const asLinux = process.platform === 'linux' ? describe : describe.skip;
  asLinux('each damaged file or setting: one line naming it, nothing left running, nothing deleted', () => {
    let golden: string;
    /** postmaster.pid as the server wrote it while it ran on the golden directory. */
    let runningPidFile: string;

    afterEach(cleanUp);

    beforeAll(async () => {
      golden = useDataDir(mkdtempSync(path.join(os.tmpdir(), 'sr-golden-')));
      chmodSync(golden, 0o755);
      const [port, pgPort] = await freePorts(2);
      const service = track(
        startService({ PORT: String(port), DATA_DIR: golden, EMBEDDED_PG_PORT: String(pgPort), JWT_SECRET: undefined, NODE_ENV: 'development' }),
      );
      await expectEventually(async () => expect((await fetch(`http://127.0.0.1:${port}/health/ready`)).status).toBe(200), 90_000, 250);
      runningPidFile = readFileSync(path.join(golden, 'pg', 'postmaster.pid'), 'utf8');
      expect(await service.kill('SIGTERM')).toBe(0);
    });

    /** A copy of a cleanly stopped data directory (cp -a keeps the owner the server runs as). */
    const copyOfGolden = (folder = 'data') => {
      const parent = mkdtempSync(path.join(os.tmpdir(), 'sr-damaged-'));
      chmodSync(parent, 0o755);
      const dataDir = useDataDir(path.join(parent, folder));
      mkdirSync(path.dirname(dataDir), { recursive: true, mode: 0o755 });
      execFileSync('cp', ['-a', golden, dataDir]);
      return dataDir;
    };

    type Run = { code: number | null; stderr: string; output: string; seconds: number };
    const run = async (dataDir: string, pgPort?: number): Promise<Run> => {
      const [port, freePgPort] = await freePorts(2);
      const started = Date.now();
      const service = track(
        startService({
          PORT: String(port),
          DATA_DIR: dataDir,
          EMBEDDED_PG_PORT: String(pgPort ?? freePgPort),
          JWT_SECRET: undefined,
          NODE_ENV: 'development',
          LOG_LEVEL: 'info',
        }),
      );
      let stderr = '';
      service.child.stderr!.on('data', (d) => (stderr += d));
      // A start that hangs (ten connection retries, a server that never answers) is killed well past the bound checked below.
      const guard = setTimeout(() => service.child.kill('SIGKILL'), 90_000);
      const code = await service.exited;
      clearTimeout(guard);
      return { code, stderr, output: service.output(), seconds: (Date.now() - started) / 1000 };
    };

    /** `naming`: what the line must contain; a remedy for PostgreSQL's files never deletes anything. */
    const expectOneLine = (result: Run, naming: string[], options: { remedyMayDelete?: boolean } = {}) => {
      expect(result.code).toBe(1);
      const lines = result.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^error: /);
      for (const text of naming) expect(lines[0]).toContain(text);
      expect(lines[0]).not.toContain('undefined');
      if (!options.remedyMayDelete) expect(lines[0]).not.toMatch(/\b(rm |remove|delete|empty the directory)/i);
      expect(result.output).not.toMatch(/(\n|\\n)\s+at /); // no stack, on stderr nor in the JSON logs
      // well under the 46 s of ten pool retries, with room for a loaded machine
      expect(result.seconds).toBeLessThan(35);
    };

    const expectKept = (dataDir: string, files: string[]) => {
      for (const file of files) expect(existsSync(path.join(dataDir, file))).toBe(true);
      expect(postgresProcessesOf(dataDir)).toEqual([]);
    };
    const ESSENTIAL = ['pg-password', 'jwt-secret', 'pg/PG_VERSION', 'pg/global/pg_control', 'pg/base', 'pg/pg_wal'];

    it('a stale pg/postmaster.pid naming a live unrelated process: moved aside, the service starts, that process is never signalled', async () => {
      const dataDir = copyOfGolden();
      const unrelated = spawn('sleep', ['600'], { stdio: 'ignore' });
      let signalled: NodeJS.Signals | null = null;
      unrelated.on('exit', (_code, signal) => (signalled = signal));
      try {
        const lines = runningPidFile.split('\n');
        lines[0] = String(unrelated.pid);
        const stale = lines.join('\n');
        writeFileSync(path.join(dataDir, 'pg', 'postmaster.pid'), stale, { mode: 0o600 });
        execFileSync('chown', ['--reference', path.join(dataDir, 'pg', 'PG_VERSION'), path.join(dataDir, 'pg', 'postmaster.pid')]);

        const [port, pgPort] = await freePorts(2);
        const service = track(
          startService({
            PORT: String(port),
            DATA_DIR: dataDir,
            EMBEDDED_PG_PORT: String(pgPort),
            JWT_SECRET: undefined,
            NODE_ENV: 'development',
            LOG_LEVEL: 'info',
          }),
        );
        try {
          await expectEventually(async () => expect((await fetch(`http://127.0.0.1:${port}/health/ready`)).status).toBe(200), 90_000, 250);
        } finally {
          await service.kill('SIGTERM');
        }
        expect(await service.exited).toBe(0);
        expect(service.output()).toContain(`pg/postmaster.pid names PID ${unrelated.pid}`);
        expect(service.output()).not.toContain('adopting');

        expect(alive(unrelated.pid)).toBe(true);
        expect(signalled).toBeNull();
        // the stale file is kept beside, as it was
        const aside = readdirSync(path.join(dataDir, 'pg')).filter((f) => f.startsWith('postmaster.pid.stale'));
        expect(aside).toHaveLength(1);
        expect(readFileSync(path.join(dataDir, 'pg', aside[0]), 'utf8')).toBe(stale);
        expectKept(dataDir, ESSENTIAL);
      } finally {
        unrelated.kill('SIGKILL');
      }
    });

    /** Writes pg/postmaster.pid as the server wrote it, naming `pid` (and `port`, when given) instead. */
    const writeStaleLock = (dataDir: string, pid: number, port?: number) => {
      const lines = runningPidFile.split('\n');
      lines[0] = String(pid);
      if (port !== undefined) lines[3] = String(port);
      const stale = lines.join('\n');
      writeFileSync(path.join(dataDir, 'pg', 'postmaster.pid'), stale, { mode: 0o600 });
      execFileSync('chown', ['--reference', path.join(dataDir, 'pg', 'PG_VERSION'), path.join(dataDir, 'pg', 'postmaster.pid')]);
      return stale;
    };
    const movedAside = (dataDir: string) => readdirSync(path.join(dataDir, 'pg')).filter((f) => f.startsWith('postmaster.pid.stale'));

    it("a stale pg/postmaster.pid whose port answers with this directory's password: refused, the file left where it is", async () => {
      // A server of this directory in another PID namespace (a second container on the same DATA_DIR)
      // has a PID that looks unrelated from here. Stood in for by a copy of the directory, served by
      // another service on the port the stale file records.
      const other = copyOfGolden();
      const [otherPort, otherPgPort] = await freePorts(2);
      const serving = track(
        startService({ PORT: String(otherPort), DATA_DIR: other, EMBEDDED_PG_PORT: String(otherPgPort), JWT_SECRET: undefined, NODE_ENV: 'development' }),
      );
      await expectEventually(async () => expect((await fetch(`http://127.0.0.1:${otherPort}/health/ready`)).status).toBe(200), 90_000, 250);

      const dataDir = copyOfGolden();
      const unrelated = spawn('sleep', ['600'], { stdio: 'ignore' });
      try {
        const stale = writeStaleLock(dataDir, unrelated.pid!, otherPgPort);
        const result = await run(dataDir);
        expectOneLine(result, [
          path.join(dataDir, 'pg', 'postmaster.pid'),
          `PID ${unrelated.pid}`,
          `port ${otherPgPort}`,
          "this directory's password",
          'another container',
        ]);
        expect(readFileSync(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8')).toBe(stale);
        expect(movedAside(dataDir)).toEqual([]);
        expect(alive(unrelated.pid)).toBe(true);
        expect((await fetch(`http://127.0.0.1:${otherPort}/health/ready`)).status).toBe(200);
        expectKept(dataDir, ESSENTIAL);
      } finally {
        unrelated.kill('SIGKILL');
        expect(await serving.kill('SIGTERM')).toBe(0);
      }
    });

    it('a missing pg/PG_VERSION beside a stale pg/postmaster.pid: refused for the directory before the lock file is touched', async () => {
      const dataDir = copyOfGolden();
      const unrelated = spawn('sleep', ['600'], { stdio: 'ignore' });
      try {
        const stale = writeStaleLock(dataDir, unrelated.pid!);
        execFileSync('rm', [path.join(dataDir, 'pg', 'PG_VERSION')]);
        const before = readdirSync(path.join(dataDir, 'pg')).sort();
        const result = await run(dataDir);
        expectOneLine(result, [path.join(dataDir, 'pg'), 'PG_VERSION', 'not a complete PostgreSQL data directory']);
        expect(readdirSync(path.join(dataDir, 'pg')).sort()).toEqual(before);
        expect(readFileSync(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8')).toBe(stale);
        expect(alive(unrelated.pid)).toBe(true);
        expectKept(
          dataDir,
          ESSENTIAL.filter((f) => f !== 'pg/PG_VERSION'),
        );
      } finally {
        unrelated.kill('SIGKILL');
      }
    });

    it('a data directory under a path with a space, renamed while the service runs: supervision keeps the live server and its lock', async () => {
      const dataDir = copyOfGolden('dir with space/data');
      const spaced = path.dirname(dataDir);
      const renamedParent = path.join(path.dirname(spaced), 'dir renamed');
      const renamed = useDataDir(path.join(renamedParent, 'data'));
      chmodSync(spaced, 0o755);
      const [port, pgPort] = await freePorts(2);
      const service = track(
        startService({
          PORT: String(port),
          DATA_DIR: dataDir,
          EMBEDDED_PG_PORT: String(pgPort),
          JWT_SECRET: undefined,
          NODE_ENV: 'development',
          LOG_LEVEL: 'info',
        }),
      );
      const ready = async () => expect((await fetch(`http://127.0.0.1:${port}/health/ready`)).status).toBe(200);
      await expectEventually(ready, 90_000, 250);
      const pid = postmasterPid(dataDir)!;
      expect(alive(pid)).toBe(true);
      /** Ready at every look for longer than several supervision rounds (one each 2 s): a misread live server shows as restarting. */
      const readyThroughout = async (ms: number) => {
        for (const end = Date.now() + ms; Date.now() < end;) {
          await ready();
          await new Promise((r) => setTimeout(r, 250));
        }
      };
      await readyThroughout(7_000);
      // A checkout moved while the service runs: /proc/<pid>/cwd of the server now names the new path.
      renameSync(spaced, renamedParent);
      await readyThroughout(7_000);

      expect(postmasterPid(renamed)).toBe(pid);
      expect(alive(pid)).toBe(true);
      expect(movedAside(renamed)).toEqual([]);
      expect(service.output()).not.toContain('embedded PostgreSQL died');
      expect(await service.kill('SIGTERM')).toBe(0);
      await expectEventually(async () => expect(alive(pid)).toBe(false), 30_000, 200);
    });

    it('a garbage pg-password: one line naming it, the server it started is stopped', async () => {
      const dataDir = copyOfGolden();
      writeFileSync(path.join(dataDir, 'pg-password'), 'xq7-garbage-not-the-password\n');
      const result = await run(dataDir);
      expectOneLine(result, [path.join(dataDir, 'pg-password'), 'backup']);
      expectKept(dataDir, ESSENTIAL);
      expect(readFileSync(path.join(dataDir, 'pg-password'), 'utf8')).toBe('xq7-garbage-not-the-password\n');
    });

    it('a missing pg/PG_VERSION: one line saying the directory is incomplete, no initdb over it', async () => {
      const dataDir = copyOfGolden();
      execFileSync('rm', [path.join(dataDir, 'pg', 'PG_VERSION')]);
      const before = readdirSync(path.join(dataDir, 'pg')).sort();
      const result = await run(dataDir);
      expectOneLine(result, [path.join(dataDir, 'pg'), 'PG_VERSION', 'not a complete PostgreSQL data directory', 'backup']);
      expect(readdirSync(path.join(dataDir, 'pg')).sort()).toEqual(before);
      expectKept(
        dataDir,
        ESSENTIAL.filter((f) => f !== 'pg/PG_VERSION'),
      );
    });

    it('EMBEDDED_PG_PORT already taken: one line naming the setting and the port', async () => {
      const dataDir = copyOfGolden();
      const [pgPort] = await freePorts(1);
      const squatter = net.createServer().listen(pgPort, '127.0.0.1');
      await once(squatter, 'listening');
      try {
        const result = await run(dataDir, pgPort);
        expectOneLine(result, [`EMBEDDED_PG_PORT ${pgPort}`, 'free port']);
        expectKept(dataDir, ESSENTIAL);
      } finally {
        squatter.close();
      }
    });

    it.each([
      ['short', 'Zm9vYmFy\n'],
      ['corrupt', '\u0000\u0001\u00fe binary bytes where the secret was, long enough to pass a length check'],
    ])('a %s jwt-secret: refused with one line naming it, never replaced (service and CLI)', async (_kind, content) => {
      const dataDir = copyOfGolden();
      const file = path.join(dataDir, 'jwt-secret');
      writeFileSync(file, content);
      const result = await run(dataDir);
      // deleting it is a remedy here, deliberately: a new secret is generated and earlier tokens stop working
      expectOneLine(result, [file, 'JWT_SECRET'], { remedyMayDelete: true });
      expect(readFileSync(file, 'utf8')).toBe(content);
      expectKept(dataDir, ESSENTIAL);

      const cli = await runCli(['token', '--app', 'demo-app'], { DATA_DIR: dataDir, JWT_SECRET: undefined });
      expect(cli.code).toBe(1);
      expect(cli.stdout).toBe('');
      const lines = cli.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(file);
      expect(readFileSync(file, 'utf8')).toBe(content);
    });
  });
});
