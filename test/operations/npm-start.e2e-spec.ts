import { jest } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../kafka/broker.mjs';
import { expectEventually } from '../utils/expect-eventually.js';
import { serviceEnv } from '../utils/processes.js';

jest.setTimeout(180_000);

// `npm start` as process supervisors, `timeout`, CI runners and containers run it: they signal npm,
// or the process npm starts, and expect the service and its embedded PostgreSQL to be gone within the
// graceful window, not re-parented to PID 1 and still answering.
const root = path.resolve(import.meta.dirname, '../..');
const GRACEFUL_MS = 35_000;

/** The parent pid of every live process, read from /proc (children are found through it). */
function parents(): Map<number, number> {
  const byPid = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid ...: comm may hold spaces and parentheses, so read after the last ')'
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      byPid.set(Number(entry), ppid);
    } catch {
      // gone while listed
    }
  }
  return byPid;
}

function descendants(pid: number): number[] {
  const byPid = parents();
  const found: number[] = [];
  const queue = [pid];
  while (queue.length) {
    const next = queue.shift()!;
    for (const [child, parent] of byPid) {
      if (parent === next) {
        found.push(child);
        queue.push(child);
      }
    }
  }
  return found;
}

function alive(pid: number): boolean {
  try {
    // a zombie has exited: only its parent has yet to read its status
    return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

/** seen: every process found under npm so far, with its command line when found. */
type NpmStart = { npm: ChildProcess; port: number; dataDir: string; seen: Map<number, string>; exited: Promise<number | null>; output(): string };

/** `npm start` with a data directory and ports of its own, on the node that runs this suite. */
async function npmStart(): Promise<NpmStart> {
  const port = await freePort();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'sr-npm-start-'));
  chmodSync(dataDir, 0o755); // the embedded server runs as the `postgres` user when we are root
  const env = serviceEnv({
    PATH: `${path.dirname(process.execPath)}:${process.env.PATH}`,
    PORT: String(port),
    DATA_DIR: dataDir,
    EMBEDDED_PG_PORT: String(await freePort()),
    LOG_LEVEL: 'info',
  });
  // its own process group, so that whatever a failed assertion leaves behind can be ended at once
  const npm = spawn('npm', ['start'], { cwd: root, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  npm.stdout!.on('data', (d) => (out += d));
  npm.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => npm.on('exit', (code, signal) => resolve(code ?? (signal ? -1 : null))));
  return { npm, port, dataDir, seen: new Map(), exited, output: () => out };
}

/** Records the processes under npm now, so that those re-parented after a signal are still known. */
function record(started: NpmStart): void {
  // (a forked child is read again until it has exec'd into its own command)
  for (const pid of descendants(started.npm.pid!)) if (!/postgres/.test(started.seen.get(pid) ?? '')) started.seen.set(pid, commandOf(pid));
}

async function untilReady(started: NpmStart): Promise<void> {
  await expectEventually(async () => {
    record(started);
    if (started.npm.exitCode !== null) throw new Error(`npm start exited ${started.npm.exitCode}:\n${started.output()}`);
    const response = await fetch(`http://127.0.0.1:${started.port}/health/ready`);
    expect(response.status).toBe(200);
  }, 120_000);
  record(started);
}

/** The process npm runs the script in: with `exec`, the service itself. */
function scriptProcess(started: NpmStart): number {
  const children = [...parents()].filter(([, parent]) => parent === started.npm.pid).map(([pid]) => pid);
  expect(children).toHaveLength(1);
  return children[0];
}

async function expectAllGone(started: NpmStart): Promise<void> {
  expect([...started.seen.values()].some((command) => /postgres/.test(command))).toBe(true); // the embedded server was among them
  await expectEventually(() => expect([...started.seen].filter(([pid]) => alive(pid)).map(([pid, command]) => `${pid} ${command}`)).toEqual([]), GRACEFUL_MS);
  await expect(fetch(`http://127.0.0.1:${started.port}/health/ready`)).rejects.toThrow();
  expect(await started.exited).not.toBeNull();
}

describe('npm start under a process supervisor (e2e, the README command as run)', () => {
  const running: NpmStart[] = [];
  afterEach(() => {
    for (const started of running.splice(0)) {
      // npm was started in a process group of its own, which what it started keeps, re-parented or not
      try {
        process.kill(-started.npm.pid!, 'SIGKILL');
      } catch {
        // already gone, as it should be
      }
      rmSync(started.dataDir, { recursive: true, force: true });
    }
  });

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`stops the service and its embedded PostgreSQL on ${signal} to the process npm start runs`, async () => {
      const started = await npmStart();
      running.push(started);
      await untilReady(started);
      const script = scriptProcess(started);
      expect(commandOf(script)).toContain('dist/main.js');
      process.kill(script, signal);
      await expectAllGone(started);
      expect(started.output()).toContain('shutting down');
    });
  }

  it('stops everything on SIGTERM to npm itself (what a container runtime or `timeout npm start` sends)', async () => {
    const started = await npmStart();
    running.push(started);
    await untilReady(started);
    started.npm.kill('SIGTERM');
    await expectAllGone(started);
  });

  it('stops everything on SIGTERM during start-up, while the embedded PostgreSQL is starting', async () => {
    const started = await npmStart();
    running.push(started);
    // as soon as a postgres process exists under npm, before the service listens
    await expectEventually(
      () => {
        record(started);
        expect(descendants(started.npm.pid!).some((pid) => /postgres -D/.test(commandOf(pid)))).toBe(true);
      },
      120_000,
      20,
    );
    process.kill(scriptProcess(started), 'SIGTERM');
    // whatever started after the signal is also under npm until it stops
    const recording = setInterval(() => {
      if (started.npm.exitCode === null) record(started);
    }, 20);
    try {
      await expectAllGone(started);
    } finally {
      clearInterval(recording);
    }
  });
});
