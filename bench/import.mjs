#!/usr/bin/env node
// The import rate (issue 22; never part of `npm test`):
//   npx nest build && DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node bench/import.mjs [--lines 2000] [--per-customer 3] [--concurrency 4]
// Runs the built CLI, `import apple` then `import google`, each over --lines lines against a loopback
// store (bench/import-mocks.mjs), into the embedded event log of a throwaway database made on the
// server of DATABASE_URL (migrated, dropped at the end). Reports lines/s, store transactions/s,
// events/s and the CLI's peak RSS (VmHWM of /proc/<pid>/status, polled every 20 ms).
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../dist/database/data-source-options.js';
import { runMigrations } from '../dist/database/migrate.js';
import { startAppleMock, startGoogleMock } from './import-mocks.mjs';
import { adminQuery, runCliMeasured as runCli } from './proc.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: args } = parseArgs({ options: { lines: { type: 'string', default: '2000' }, 'per-customer': { type: 'string', default: '3' }, concurrency: { type: 'string', default: '4' } } });
const lines = Number(args.lines);
const perCustomer = Number(args['per-customer']);
const admin = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const tmp = mkdtempSync(path.join(os.tmpdir(), 'bench-import-'));
const file = (name, text) => (writeFileSync(path.join(tmp, name), text), path.join(tmp, name));



const loadBefore = os.loadavg().map((l) => Number(l.toFixed(2)));
const name = `bench_import_${process.pid}`;
await adminQuery(admin, `CREATE DATABASE ${name}`);
const u = new URL(admin);
u.pathname = `/${name}`;
const url = u.toString();
const apple = await startAppleMock({ bundleId: 'com.example.bench', customers: lines, perCustomer });
const google = await startGoogleMock({ packageName: 'com.example.bench', customers: lines });
try {
  const ds = await new DataSource(dataSourceOptions(url, { poolSize: 2, applicationName: 'bench-import' })).initialize();
  await runMigrations(ds);
  const env = {
    DATABASE_URL: url,
    IMPORT_CONCURRENCY: args.concurrency,
    APPLE_APPS: 'app-a:com.example.bench:Sandbox',
    APPLE_ROOT_CERTIFICATES: file('root.pem', apple.rootPem),
    APPLE_API_KEYS: `app-a:57246542-96fe-1a63-e053-0824d011072a:BENCH1:${file('SubscriptionKey_BENCH1.p8', apple.privateKeyPem)}`,
    APPLE_API_BASE_URL: apple.base,
    GOOGLE_APPS: 'app-g:com.example.bench',
    GOOGLE_PUBSUB_AUDIENCE: 'https://bench.example.com/v2/notifications/google/app-g',
    GOOGLE_SERVICE_ACCOUNT_FILE: file('play.json', google.serviceAccountKey),
    GOOGLE_API_BASE_URL: google.base,
    GOOGLE_API_SELF_SIGNED_JWT: 'true',
  };
  const results = [];
  for (const [store, cliArgs, transactions] of [
    ['apple', ['import', 'apple', '--app', 'app-a', '--file', file('apple.csv', apple.lines.join('\n') + '\n')], lines * perCustomer],
    ['google', ['import', 'google', '--app', 'app-g', '--file', file('google.csv', google.lines.join('\n') + '\n')], lines],
  ]) {
    const run = await runCli(root, cliArgs, env);
    const summary = /imported (\d+) line\(s\) \((\d+) event\(s\)\).*/.exec(run.stderr);
    if (run.code !== 0 || !summary || Number(summary[1]) !== lines) throw new Error(`${store}: exit ${run.code}\n${run.stderr.slice(-2000)}`);
    results.push({
      store,
      lines,
      transactions,
      events: Number(summary[2]),
      seconds: Number(run.seconds.toFixed(2)),
      'lines/s': Math.round(lines / run.seconds),
      'transactions/s': Math.round(transactions / run.seconds),
      'events/s': Math.round(Number(summary[2]) / run.seconds),
      'peak RSS MiB': Number((run.hwmKb / 1024).toFixed(1)),
    });
  }
  await ds.destroy();
  console.log(JSON.stringify({ lines, perCustomer, concurrency: Number(args.concurrency), cpus: os.cpus().length, loadavgBefore: loadBefore, loadavgAfter: os.loadavg().map((l) => Number(l.toFixed(2))), node: process.version }));
  console.table(results);
} finally {
  await apple.close();
  await google.close();
  await adminQuery(admin, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}
