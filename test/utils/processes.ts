import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { TEST_SECRET } from './app.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Environment for a child process of the built service: nothing inherited from the test runner's config. */
export function serviceEnv(env: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TMPDIR: process.env.TMPDIR,
    NODE_ENV: 'test',
    LOG_LEVEL: 'warn',
    JWT_SECRET: TEST_SECRET,
  };
  // An explicit undefined removes a default (JWT_SECRET: undefined runs without a configured secret).
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete base[k];
    else base[k] = v;
  }
  return base;
}

export type CliResult = { code: number | null; stdout: string; stderr: string };

/** Runs `node dist/cli.js ...args` (what `npm run cli -- ...` runs after building). */
export function runCli(args: string[], env: Record<string, string | undefined>, stdin?: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(root, 'dist/cli.js'), ...args], { env: serviceEnv(env), cwd: root });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    if (stdin !== undefined) child.stdin.end(stdin);
    else child.stdin.end();
  });
}

export function writeTempFile(name: string, content: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sr-test-'));
  const file = path.join(dir, name);
  writeFileSync(file, content);
  return file;
}

export type ServiceProcess = { child: ChildProcess; exited: Promise<number | null>; output(): string; kill(signal?: NodeJS.Signals): Promise<number | null> };

/** Starts the built service (`node dist/main.js`) as a separate process. */
export function startService(env: Record<string, string | undefined>): ServiceProcess {
  const child = spawn(process.execPath, [path.join(root, 'dist/main.js')], { env: serviceEnv(env), cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? -1 : null))));
  return {
    child,
    exited,
    output: () => out,
    async kill(signal = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}
