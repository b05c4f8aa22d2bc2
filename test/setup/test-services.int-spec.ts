import { jest } from '@jest/globals';
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// The suite's own set-up leaves nothing behind: a failed set-up (here: no Java for the Kafka broker)
// stops the embedded PostgreSQL it had started and removes its directory.
jest.setTimeout(120_000);

const root = path.resolve(import.meta.dirname, '../..');

it('a set-up that fails after starting PostgreSQL stops it and removes its directory', async () => {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'sr-setup-'));
  chmodSync(tmp, 0o755); // as root the embedded server runs as `postgres`, which must enter it
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, TMPDIR: tmp, JAVA_HOME: '/nonexistent-java' };
  const child = spawn(
    process.execPath,
    ['--input-type=module', '-e', "const { default: setup } = await import('./test/setup/global-setup.mjs'); await setup();"],
    {
      cwd: root,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout.on('data', (c) => (output += c));
  child.stderr.on('data', (c) => (output += c));
  const code = await new Promise((resolve) => child.once('exit', resolve));
  expect(output).toMatch(/the tests run a Kafka broker with Java/);
  expect(code).not.toBe(0);
  // PostgreSQL had been started in a directory under TMPDIR: gone, and no server runs from it.
  expect(readdirSync(tmp)).toEqual([]);
  const running = execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.includes(tmp));
  expect(running).toEqual([]);
});

it('a set-up and teardown leave nothing in the temporary directory: the embedded server and what test files made there', async () => {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'sr-setup-'));
  chmodSync(tmp, 0o755);
  // a broker given (nothing to start), the embedded PostgreSQL started and stopped; a file a test would leave
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, TMPDIR: tmp, KAFKA_BROKERS: '127.0.0.1:1' };
  const script = [
    "const { default: setup } = await import('./test/setup/global-setup.mjs');",
    "const { default: teardown } = await import('./test/setup/global-teardown.mjs');",
    "const { mkdtempSync, writeFileSync } = await import('node:fs');",
    "const { tmpdir } = await import('node:os');",
    'await setup();',
    "writeFileSync(mkdtempSync(tmpdir() + '/sr-left-') + '/x.ndjson', '{}');",
    'await teardown();',
  ].join(' ');
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (c) => (output += c));
  child.stderr.on('data', (c) => (output += c));
  const code = await new Promise((resolve) => child.once('exit', resolve));
  expect({ code, output }).toEqual({ code: 0, output: expect.stringContaining('[test setup] PostgreSQL embedded') });
  expect(readdirSync(tmp)).toEqual([]);
});
