// What the benchmarks read from /proc: CPU time and memory of processes they started or watch.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';

/** sysconf(_SC_CLK_TCK): /proc counts CPU time in these ticks, 100 on every Linux this runs on (USER_HZ). */
const CLOCK_TICKS = 100;

/** CPU time (user + system, /proc/<pid>/stat fields 14 and 15) of a process, in seconds; undefined once it is gone. */
export function cpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // the command (field 2) may hold spaces and parentheses: fields are counted from its last ')'
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}

/** Every process whose command is PostgreSQL's server (the postmasters and their backends). */
export function postgresPids() {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres';
      } catch {
        return false;
      }
    });
}

/**
 * CPU seconds of PostgreSQL's processes from this call until the returned function is called,
 * including processes that came and went in between (sampled every 200 ms).
 */
export function postgresCpu() {
  const start = new Map();
  const last = new Map();
  const sample = () => {
    for (const pid of postgresPids()) {
      const s = cpuSeconds(pid);
      if (s !== undefined) last.set(pid, s);
    }
  };
  sample();
  for (const [pid, s] of last) start.set(pid, s);
  const timer = setInterval(sample, 200);
  return () => {
    clearInterval(timer);
    sample();
    let total = 0;
    for (const [pid, s] of last) total += s - (start.get(pid) ?? 0);
    return total;
  };
}

/**
 * Runs the built CLI (dist/cli.js) as an operator would, with `env` over a production-like base;
 * resolves with its exit code, stderr, wall time (s) and peak RSS (VmHWM of /proc/<pid>/status,
 * polled every 20 ms, in kB).
 */
export function runCliMeasured(root, cliArgs, env) {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(process.execPath, [path.join(root, 'dist/cli.js'), ...cliArgs], {
      cwd: root,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'production', ALLOW_EMBEDDED: 'true', JWT_SECRET: randomBytes(32).toString('hex'), LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    let hwm = 0;
    const poll = setInterval(() => {
      try {
        hwm = Math.max(hwm, Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? 0));
      } catch {}
    }, 20);
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => {
      clearInterval(poll);
      resolve({ code, stderr, seconds: Number(process.hrtime.bigint() - started) / 1e9, hwmKb: hwm });
    });
  });
}

/** One statement on the server of `url` (CREATE/DROP DATABASE for a throwaway database). */
export async function adminQuery(url, sql) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** Until `url` answers 2xx (a probe of a service the benchmark started); throws when `child` exits first or after a minute. */
export async function waitForService(url, child) {
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {}
    if (i > 600 || child.exitCode !== null) throw new Error('the service did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
}
