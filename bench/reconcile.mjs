#!/usr/bin/env node
// The reconciliation rate (issue 44; never part of `npm test`):
//   npx nest build && DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node bench/reconcile.mjs [--google 100000] [--apple 100000] [--concurrency 8] [--drift 0.01]
// A throwaway database on DATABASE_URL's server (migrated, dropped at the end) holding --google
// Google subscriptions and --apple App Store subscriptions of one app each, written as the
// projection writes the rows of what the loopback stores below answer (the service's own mapping and
// row image, from dist/), except a share --drift of them that miss their latest renewal. Then the
// built CLI, as an operator runs it: `reconcile --all` (every subscription asked, the drifted ones
// healed), `reconcile --all` again (nothing to heal) and `reconcile` (the suspect pass: the selection
// read whole, nobody due). Reports subscriptions checked per second over the CLI's wall time and its
// peak RSS (VmHWM) as a table, and a results.json beside it; docs/benchmarks-reconcile.md holds the figures.
import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../dist/database/data-source-options.js';
import { runMigrations } from '../dist/database/migrate.js';
import { decodeEvent } from '../dist/events/decode-event.js';
import { applyBatch } from '../dist/projection/apply-batch.js';
import { transactionRow } from '../dist/projection/project-events.js';
import { appleToEvents } from '../dist/store-notifications/apple/apple-to-events.js';
import { createAppleTestCa, signAppleJws } from '../dist/store-notifications/apple/apple-test-ca.js';
import { googleSubscriptionEvents } from '../dist/store-notifications/google/google-to-events.js';
import { adminQuery, runCliMeasured as runCli } from './proc.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: args } = parseArgs({
  options: {
    google: { type: 'string', default: '100000' },
    apple: { type: 'string', default: '100000' },
    concurrency: { type: 'string', default: '8' },
    drift: { type: 'string', default: '0.01' },
  },
});
const G = Number(args.google);
const A = Number(args.apple);
const DRIFT_EVERY = Math.max(1, Math.round(1 / Number(args.drift)));
const admin = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const tmp = mkdtempSync(path.join(os.tmpdir(), 'bench-reconcile-'));
const file = (name, text) => (writeFileSync(path.join(tmp, name), text), path.join(tmp, name));
const log = (...m) => console.error(`[reconcile ${new Date().toISOString().slice(11, 19)}]`, ...m);
const DAY = 86_400_000;
const NOW = Date.now();
const listen = (server) => new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${server.address().port}`)));
const json = (res, status, body) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

// --- the stores: what each subscription is now ---------------------------------------------------
const googleState = (i) => {
  const order = `GPA.3300-0000-0000-${String(i).padStart(6, '0')}`;
  return {
    kind: 'androidpublisher#subscriptionPurchaseV2',
    regionCode: 'DE',
    startTime: new Date(NOW - 40 * DAY).toISOString(),
    subscriptionState: 'SUBSCRIPTION_STATE_ACTIVE',
    latestOrderId: `${order}..0`,
    acknowledgementState: 'ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED',
    externalAccountIdentifiers: { obfuscatedExternalAccountId: `user-${i}` },
    lineItems: [
      {
        productId: 'pro_monthly',
        expiryTime: new Date(NOW + 20 * DAY).toISOString(),
        autoRenewingPlan: { autoRenewEnabled: true, recurringPrice: { currencyCode: 'EUR', units: '4', nanos: 990000000 } },
        offerDetails: { basePlanId: 'monthly', offerTags: [] },
        latestSuccessfulOrderId: `${order}..0`,
      },
    ],
  };
};
const appleChain = (i) => {
  const original = String(2_000_000_000 + i * 10);
  const first = NOW - 40 * DAY;
  return [0, 1].map((k) => ({
    transactionId: String(Number(original) + k),
    originalTransactionId: original,
    productId: 'pro_monthly',
    purchaseDate: first + k * 30 * DAY,
    originalPurchaseDate: first,
    expiresDate: first + (k + 1) * 30 * DAY,
    type: 'Auto-Renewable Subscription',
    quantity: 1,
    inAppOwnershipType: 'PURCHASED',
    transactionReason: k === 0 ? 'PURCHASE' : 'RENEWAL',
    price: 4990,
    currency: 'USD',
    appAccountToken: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    bundleId: 'com.example.bench',
    environment: 'Sandbox',
  }));
};
const appleRenewal = (t) => ({ originalTransactionId: t.originalTransactionId, productId: t.productId, autoRenewProductId: t.productId, autoRenewStatus: 1 });

async function startStores() {
  const ca = await createAppleTestCa();
  const signedDate = NOW - 60_000;
  const sign = (p) => signAppleJws(ca, { bundleId: 'com.example.bench', environment: 'Sandbox', ...p, signedDate });
  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    const sub = /\/purchases\/subscriptionsv2\/tokens\/bench-(\d+)$/.exec(url.pathname);
    if (sub) return Number(sub[1]) < G ? json(res, 200, googleState(Number(sub[1]))) : json(res, 404, { error: { code: 404, message: 'not found' } });
    if (url.pathname.endsWith('/purchases/voidedpurchases')) return json(res, 200, { voidedPurchases: [] });
    const history = /^\/inApps\/v2\/history\/(\d+)$/.exec(url.pathname);
    const subs = /^\/inApps\/v1\/subscriptions\/(\d+)$/.exec(url.pathname);
    const i = Math.floor((Number((history ?? subs)?.[1]) - 2_000_000_000) / 10);
    if (!(i >= 0 && i < A)) return json(res, 404, { errorCode: 4040010, errorMessage: 'Transaction id not found.' });
    const chain = appleChain(i);
    if (history) return json(res, 200, { revision: '2', hasMore: false, bundleId: 'com.example.bench', environment: 'Sandbox', signedTransactions: chain.map(sign) });
    const last = chain[1];
    json(res, 200, {
      environment: 'Sandbox',
      bundleId: 'com.example.bench',
      data: [{ subscriptionGroupIdentifier: 'g', lastTransactions: [{ status: 1, originalTransactionId: last.originalTransactionId, signedTransactionInfo: sign(last), signedRenewalInfo: sign(appleRenewal(last)) }] }],
    });
  });
  return { base: await listen(server), rootPem: new X509Certificate(ca.root).toString(), close: () => new Promise((resolve) => server.close(resolve)) };
}

// --- the read models: the rows the projection wrote from what the stores said, some a renewal behind ---
const rowOf = (appId, event) => {
  const d = decodeEvent(JSON.stringify(event), { maxFutureSkewMs: 3_600_000 });
  if (!d.ok) throw new Error(`${d.code}: ${d.reason}`);
  return transactionRow(appId, d.event.data, { version_time: d.event.time, version_id: d.event.id });
};
function googleRows(i) {
  const state = googleState(i);
  if (i % DRIFT_EVERY === 0) {
    // The renewal was never announced: the read models hold the first order, ended 10 days ago.
    const first = structuredClone(state);
    first.latestOrderId = first.lineItems[0].latestSuccessfulOrderId = first.latestOrderId.slice(0, -3);
    first.lineItems[0].expiryTime = new Date(NOW - 10 * DAY).toISOString();
    return googleSubscriptionEvents('app-g', `seed-${i}`, `bench-${i}`, first, new Date(NOW - 30 * DAY)).filter((e) => e.type === 'transaction.updated');
  }
  return googleSubscriptionEvents('app-g', `seed-${i}`, `bench-${i}`, state, new Date(NOW - 60_000)).filter((e) => e.type === 'transaction.updated');
}
function appleRows(i) {
  const chain = appleChain(i);
  const drifted = i % DRIFT_EVERY === 0;
  const kept = drifted ? chain.slice(0, 1) : chain;
  return kept.map((t, k) =>
    appleToEvents('app-a', { notificationUUID: `seed-${i}-${k}`, signedDate: NOW - 60_000 }, t, k === kept.length - 1 ? appleRenewal(t) : undefined)[0],
  );
}

async function load(ds, appId, n, rowsOf) {
  let columns;
  for (let from = 0; from < n; from += 5000) {
    const rows = [];
    for (let i = from; i < Math.min(n, from + 5000); i++) for (const e of rowsOf(i)) rows.push(rowOf(appId, e));
    columns ??= Object.keys(rows[0]).filter((c) => c !== 'version_source' && c !== 'received_at');
    const list = columns.map((c) => `"${c}"`).join(', ');
    await ds.query(`INSERT INTO read_model.transactions (${list}) SELECT ${list} FROM json_populate_recordset(NULL::read_model.transactions, $1::json)`, [JSON.stringify(rows)]);
  }
}

/** What the service's consumer would do between passes: project what the passes appended to the embedded log. */
async function projectLog(ds) {
  for (;;) {
    const rows = await ds.query(
      `SELECT l.topic, l.partition, l."offset"::text AS "offset", l.key, l.value FROM public.event_log l
       LEFT JOIN read_model.projection_offsets o ON o.topic = l.topic AND o.partition = l.partition
       WHERE l."offset" >= coalesce(o.next_offset, 0) ORDER BY l.topic, l.partition, l."offset" LIMIT 1000`,
    );
    if (rows.length === 0) return;
    const { topic, partition } = rows[0];
    const batch = rows.filter((r) => r.topic === topic && r.partition === partition);
    await applyBatch(ds, { topic, partition, messages: batch.map((r) => ({ offset: r.offset, key: r.key, value: r.value })) });
  }
}

const loadBefore = os.loadavg().map((l) => Number(l.toFixed(2)));
const name = `bench_reconcile_${process.pid}`;
await adminQuery(admin, `CREATE DATABASE ${name}`);
const u = new URL(admin);
u.pathname = `/${name}`;
const url = u.toString();
const stores = await startStores();
const results = [];
try {
  const ds = await new DataSource(dataSourceOptions(url, { poolSize: 2, applicationName: 'bench-reconcile', statementTimeoutMs: 0 })).initialize();
  await runMigrations(ds);
  await ds.query(`SET synchronous_commit = off`);
  log(`loading ${G} Google and ${A} App Store subscriptions (1 in ${DRIFT_EVERY} a renewal behind)`);
  await load(ds, 'app-g', G, googleRows);
  await load(ds, 'app-a', A, appleRows);
  await ds.query('ANALYZE read_model.transactions');
  const account = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const env = {
    // The heap `npm run cli` gives the CLI in production (package.json): memory that grew with the subscriptions would run out.
    NODE_OPTIONS: '--max-old-space-size=192 --max-semi-space-size=32',
    DATABASE_URL: url,
    IMPORT_CONCURRENCY: args.concurrency,
    APPLE_APPS: 'app-a:com.example.bench:Sandbox',
    APPLE_ROOT_CERTIFICATES: file('root.pem', stores.rootPem),
    APPLE_API_KEYS: `app-a:57246542-96fe-1a63-e053-0824d011072a:BENCH1:${file('SubscriptionKey_BENCH1.p8', generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }))}`,
    APPLE_API_BASE_URL: stores.base,
    GOOGLE_APPS: 'app-g:com.example.bench',
    GOOGLE_PUBSUB_AUDIENCE: 'https://bench.example.com/v2/notifications/google/app-g',
    GOOGLE_SERVICE_ACCOUNT_FILE: file(
      'play.json',
      JSON.stringify({ type: 'service_account', project_id: 'bench', private_key_id: 'bench-1', private_key: account.privateKey.export({ format: 'pem', type: 'pkcs8' }), client_email: 'bench@bench.iam.gserviceaccount.com', client_id: '1', token_uri: 'https://oauth2.googleapis.com/token' }),
    ),
    GOOGLE_API_BASE_URL: stores.base,
    GOOGLE_API_SELF_SIGNED_JWT: 'true',
  };
  for (const [store, appId, n] of [
    ['google', 'app-g', G],
    ['apple', 'app-a', A],
  ]) {
    if (n === 0) continue;
    for (const [pass, cliArgs] of [
      ['--all (heals the drifted)', ['--all']],
      ['--all again (nothing to heal)', ['--all']],
      ['suspect (none due)', []],
    ]) {
      await projectLog(ds);
      log(`${store}: reconcile ${cliArgs.join(' ')}`);
      const run = await runCli(root, ['reconcile', '--app', appId, ...cliArgs], env);
      const s = /asked (\d+) .*healed (\d+) subscription\(s\).*published (\d+) event\(s\).*failed (\d+)/.exec(run.stderr);
      if (run.code !== 0 || !s) throw new Error(`${store} ${pass}: exit ${run.code}\n${run.stderr.slice(-2000)}`);
      results.push({
        store,
        pass,
        subscriptions: n,
        asked: Number(s[1]),
        healed: Number(s[2]),
        events: Number(s[3]),
        seconds: Number(run.seconds.toFixed(1)),
        'checked/s': Number(s[1]) > 0 ? Math.round(Number(s[1]) / run.seconds) : '-',
        'peak RSS MiB': Number((run.hwmKb / 1024).toFixed(1)),
      });
    }
  }
  await ds.destroy();
  const meta = { google: G, apple: A, driftEvery: DRIFT_EVERY, concurrency: Number(args.concurrency), cpus: os.cpus().length, loadavgBefore: loadBefore, loadavgAfter: os.loadavg().map((l) => Number(l.toFixed(2))), node: process.version, at: new Date().toISOString() };
  console.log(JSON.stringify(meta));
  console.table(results);
  writeFileSync(path.join(tmp, 'results.json'), JSON.stringify({ meta, results }, null, 2));
  console.error(`results in ${path.join(tmp, 'results.json')}`);
} finally {
  await stores.close();
  await adminQuery(admin, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}
