#!/usr/bin/env node
// Stripe (issue 45; never part of `npm test`):
//   npx nest build && DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node bench/stripe.mjs [--subscriptions 5000] [--requests 3000]
// A loopback Stripe API (subscriptions generated from Stripe's own fixture, test/fixtures/stripe,
// one to three paid invoices each) and a throwaway database on DATABASE_URL's server (migrated,
// dropped at the end):
// 1. `import stripe` (the built CLI) over --subscriptions subscriptions: subscriptions/s, events/s and
//    the CLI's peak RSS (VmHWM of /proc/<pid>/status, polled every 20 ms);
// 2. the webhook endpoint (the built service, its consumer off: the endpoint alone) under autocannon,
//    --requests signed customer.subscription.updated events for distinct subscriptions over 8
//    connections: each is verified (Stripe's library), the subscription read from the mock, and the
//    events appended to the log. Writes docs/benchmarks-stripe.md.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import Stripe from 'stripe';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../dist/database/data-source-options.js';
import { runMigrations } from '../dist/database/migrate.js';
import { freePort } from '../test/kafka/broker.mjs';
import { adminQuery, runCliMeasured as runCli, waitForService } from './proc.mjs';
import { SERVICE_NODE_FLAGS } from './service-flags.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: args } = parseArgs({ options: { subscriptions: { type: 'string', default: '5000' }, requests: { type: 'string', default: '3000' } } });
const SUBSCRIPTIONS = Number(args.subscriptions);
const REQUESTS = Number(args.requests);
const admin = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const API_KEY = 'rk_test_bench0123456789';
const SECRET = 'whsec_bench0123456789';
const DAY = 86_400;
const log = (...m) => console.error(`[stripe ${new Date().toISOString().slice(11, 19)}]`, ...m);
const fixture = (name) => JSON.parse(readFileSync(path.join(root, 'test/fixtures/stripe', `${name}.json`), 'utf8'));
const SUB = fixture('subscription');
const INVOICE = fixture('invoice');
const START = Math.floor(Date.now() / 1000) - 75 * DAY;

/** Subscription `i` (created in order), with `i % 3 + 1` monthly invoices, all paid. */
function subscriptionOf(i) {
  const id = `sub_bench${String(i).padStart(8, '0')}`;
  const months = (i % 3) + 1;
  const start = START + (3 - months) * 30 * DAY + (i % 1000);
  const invoices = Array.from({ length: months }, (_, m) => {
    const periodStart = start + m * 30 * DAY;
    return {
      ...INVOICE,
      id: `in_bench${String(i).padStart(8, '0')}_${m}`,
      status: 'paid',
      amount_paid: 999,
      currency: 'usd',
      livemode: false,
      status_transitions: { ...INVOICE.status_transitions, paid_at: periodStart + 60 },
      lines: { ...INVOICE.lines, data: [{ ...INVOICE.lines.data[0], period: { start: periodStart, end: periodStart + 30 * DAY }, pricing: { type: 'price_details', price_details: { price: 'price_monthly' } } }] },
      parent: { quote_details: null, subscription_details: { metadata: null, subscription: id }, type: 'subscription_details' },
    };
  });
  const last = invoices.at(-1);
  const item = { ...SUB.items.data[0], quantity: 1, current_period_start: last.lines.data[0].period.start, current_period_end: last.lines.data[0].period.end, price: { ...SUB.items.data[0].price, id: 'price_monthly', currency: 'usd', unit_amount: 999 } };
  const sub = { ...SUB, id, status: 'active', livemode: false, created: START + i, start_date: start, trial_start: null, trial_end: null, cancel_at_period_end: false, cancel_at: null, canceled_at: null, ended_at: null, latest_invoice: last, metadata: { applicationUsername: `user-${i}` }, items: { ...SUB.items, data: [item] } };
  delete sub.current_period_start;
  delete sub.current_period_end;
  return { sub, invoices };
}

function startStripe() {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://localhost');
    const send = (status, body) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (req.headers.authorization !== `Bearer ${API_KEY}`) return send(401, { error: { type: 'invalid_request_error', message: 'Invalid API Key' } });
    if (url.pathname === '/v1/subscriptions') {
      // newest first, as Stripe lists
      const limit = Number(url.searchParams.get('limit') ?? 10);
      const after = url.searchParams.get('starting_after');
      const from = after ? SUBSCRIPTIONS - Number(after.slice('sub_bench'.length)) : 0;
      const data = [];
      for (let k = from; k < Math.min(SUBSCRIPTIONS, from + limit); k++) data.push(subscriptionOf(SUBSCRIPTIONS - 1 - k).sub);
      return send(200, { object: 'list', data, has_more: from + limit < SUBSCRIPTIONS, url: url.pathname });
    }
    const one = /^\/v1\/subscriptions\/sub_bench(\d+)$/.exec(url.pathname);
    if (one) return send(200, subscriptionOf(Number(one[1])).sub);
    if (url.pathname === '/v1/invoices') {
      const i = Number((url.searchParams.get('subscription') ?? '').slice('sub_bench'.length));
      return send(200, { object: 'list', data: subscriptionOf(i).invoices.reverse(), has_more: false, url: url.pathname });
    }
    send(404, { error: { type: 'invalid_request_error', message: 'Unrecognized request URL' } });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, base: `http://127.0.0.1:${server.address().port}` })));
}



const name = `bench_stripe_${process.pid}`;
await adminQuery(admin, `CREATE DATABASE ${name}`);
const u = new URL(admin);
u.pathname = `/${name}`;
const url = u.toString();
const stripeApi = await startStripe();
let service;
try {
  const ds = await new DataSource(dataSourceOptions(url, { poolSize: 2, applicationName: 'bench-stripe' })).initialize();
  await runMigrations(ds);
  await ds.destroy();
  const env = { DATABASE_URL: url, STRIPE_APPS: `app-s:${SECRET}:${API_KEY}`, STRIPE_API_BASE_URL: stripeApi.base };

  log(`import stripe over ${SUBSCRIPTIONS} subscriptions`);
  const run = await runCli(root, ['import', 'stripe', '--app', 'app-s'], env);
  const summary = /imported (\d+) line\(s\) \((\d+) event\(s\)\)/.exec(run.stderr);
  if (run.code !== 0 || !summary || Number(summary[1]) !== SUBSCRIPTIONS) throw new Error(`import: exit ${run.code}\n${run.stderr.slice(-2000)}`);
  const imported = { seconds: run.seconds, events: Number(summary[2]), rssMiB: run.hwmKb / 1024 };
  log(`import: ${(SUBSCRIPTIONS / run.seconds).toFixed(0)} subscriptions/s, ${(imported.events / run.seconds).toFixed(0)} events/s, peak RSS ${imported.rssMiB.toFixed(1)} MiB`);

  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  service = spawn(process.execPath, [...SERVICE_NODE_FLAGS, path.join(root, 'dist/main.js')], {
    env: { PATH: process.env.PATH, NODE_ENV: 'development', PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', JWT_SECRET: randomBytes(32).toString('hex'), CONSUMER_ENABLED: 'false', WEBHOOK_DELIVERY_ENABLED: 'false', DOCS_UI_ENABLED: 'false', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  await waitForService(`${base}/health/live`, service);
  const stripe = new Stripe(API_KEY);
  const EVENT = fixture('event');
  const bodies = Array.from({ length: REQUESTS }, (_, i) =>
    JSON.stringify({ ...EVENT, id: `evt_bench${i}`, type: 'customer.subscription.updated', created: Math.floor(Date.now() / 1000), data: { object: { id: `sub_bench${String(i % SUBSCRIPTIONS).padStart(8, '0')}`, object: 'subscription' } } }),
  );
  let next = 0;
  const statuses = {};
  const result = await autocannon({
    url: `${base}/v2/notifications/stripe/app-s`,
    method: 'POST',
    connections: 8,
    amount: REQUESTS,
    requests: [
      {
        setupRequest: (req) => {
          const body = bodies[next++ % bodies.length];
          // signed as Stripe signs, when sent: the timestamp must be within the tolerance
          return { ...req, headers: { 'content-type': 'application/json', 'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload: body, secret: SECRET }) }, body };
        },
        onResponse: (status) => (statuses[status] = (statuses[status] ?? 0) + 1),
      },
    ],
  });
  if (statuses[200] !== REQUESTS) throw new Error(`webhooks: ${JSON.stringify(statuses)}`);
  const endpoint = { rps: REQUESTS / result.duration, p50: result.latency.p50, p99: result.latency.p99, max: result.latency.max };
  log(`webhooks: ${endpoint.rps.toFixed(0)} events/s, p50 ${endpoint.p50} ms, p99 ${endpoint.p99} ms`);

  const machine = `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'unknown'}, Node ${process.version}, ${os.platform()} ${os.release()}`;
  writeFileSync(
    path.join(root, 'docs/benchmarks-stripe.md'),
    `# Stripe: the webhook endpoint and \`import stripe\`

Generated by \`DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node bench/stripe.mjs --subscriptions ${SUBSCRIPTIONS} --requests ${REQUESTS}\`
(after \`npx nest build\`) on ${new Date().toISOString().slice(0, 10)}: a throwaway database on that server, the embedded
event log, a loopback Stripe API answering subscriptions made from Stripe's own fixture (one to
three paid invoices each). Machine: ${machine}; the mock and the load generator share the two cores
(load average ${os.loadavg()[0].toFixed(1)} at the end).

| run | count | per second | latency p50 / p99 / max (ms) | peak RSS |
|---|---:|---:|---:|---:|
| \`import stripe\` (the CLI, \`IMPORT_CONCURRENCY\` 4): list pages of 100, then per subscription its state and its paid invoices | ${SUBSCRIPTIONS} subscriptions, ${imported.events} events | **${(SUBSCRIPTIONS / imported.seconds).toFixed(0)}** subscriptions, ${(imported.events / imported.seconds).toFixed(0)} events | | ${imported.rssMiB.toFixed(1)} MiB |
| webhooks (the service, consumer off): verify the signature, read the subscription, append | ${REQUESTS} events over 8 connections | **${endpoint.rps.toFixed(0)}** events | ${endpoint.p50} / **${endpoint.p99}** / ${endpoint.max} | |

The import holds one page of subscription ids and the lines in flight, whatever the number of
subscriptions: its peak RSS is the CLI's own. Each webhook costs one Stripe API call (the
subscription with its latest invoice) on loopback here; against Stripe that call's latency (tens of
milliseconds) adds to each answer, not to the service's CPU.
`,
  );
  log('wrote docs/benchmarks-stripe.md');
} finally {
  service?.kill('SIGTERM');
  if (service) await new Promise((r) => (service.exitCode !== null ? r() : service.once('exit', r)));
  stripeApi.server.close();
  await adminQuery(admin, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}
