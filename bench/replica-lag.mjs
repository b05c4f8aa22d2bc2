#!/usr/bin/env node
// Replica lag under load (issue 25, docs/scaling.md "Lag under load"). Never part of `npm test`:
//   npx nest build && node bench/replica-lag.mjs [--events 300000] [--connections 20] [--wal-writer-delay 200ms]
// A primary and one streaming standby (test/setup/replica-pair.mjs: DATABASE_URL's server's binaries,
// or the embedded package's), with the embedded server's settings, durability on and PostgreSQL's
// default wal_writer_delay. One topic of generated events in time order (random ids, as stores send
// them) is projected from the start into a fresh database on the primary by one service instance,
// twice: alone, then while an API-only instance answers random-user lookups from the standby
// (DATABASE_READ_URL) at --connections. Sampled every 100 ms: how far the standby's replay is behind
// (pg_stat_replication on the primary: bytes and replay_lag), and how long a projected batch takes
// to be visible on the standby (the stored offsets read on both servers). Also the service's own
// lag metric. Writes docs/benchmarks-replica-lag.md. Kafka: KAFKA_BROKERS or a local broker.
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { Kafka, logLevel, Partitioners } from 'kafkajs';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { freePort, startKafkaBroker } from '../test/kafka/broker.mjs';
import { replicaBinaries, startReplicaPair } from '../test/setup/replica-pair.mjs';
import { dataSourceOptions } from '../dist/database/data-source-options.js';
import { runMigrations } from '../dist/database/migrate.js';
import { writeHeavySettings } from '../dist/database/embedded-postgres.js';
import { generateEvents } from '../dist/generate/generate-events.js';
import { mintToken } from '../dist/auth/mint-token.js';
import { connectWhenReady, sendEvents } from './clients.mjs';
import { cpuSeconds } from './proc.mjs';
import { SERVICE_NODE_FLAGS } from './service-flags.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: args } = parseArgs({
  options: { events: { type: 'string', default: '300000' }, connections: { type: 'string', default: '20' }, 'wal-writer-delay': { type: 'string', default: '200ms' } },
});
const EVENTS = Number(args.events);
const CONNECTIONS = Number(args.connections);
const PARTITIONS = 6;
const SECRET = 'bench-secret-bench-secret-bench-secret-0123';
const log = (...m) => console.error(`[replica-lag ${new Date().toISOString().slice(11, 19)}]`, ...m);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const withDb = (url, name) => Object.assign(new URL(url), { pathname: `/${name}` }).toString();
const pct = (xs, p) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] : NaN);

// every service this run starts, killed if the run fails half-way
const children = new Set();
process.on('exit', () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});
function service(env) {
  const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, path.join(root, 'dist/main.js')], {
    env: { PATH: process.env.PATH, NODE_ENV: 'production', LOG_LEVEL: 'warn', JWT_SECRET: SECRET, ...env },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  children.add(child);
  return child;
}
const stop = async (child) => {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  if (await Promise.race([exited.then(() => true), sleep(30_000).then(() => false)])) return;
  child.kill('SIGKILL');
  await exited;
};
async function waitHttp(url) {
  for (let i = 0; i < 600; i++) {
    if (await fetch(url).then((r) => r.ok, () => false)) return;
    await sleep(100);
  }
  throw new Error(`${url} did not answer`);
}
/** The replica lag the service itself reports (`/metrics`), in seconds; undefined while absent. */
async function lagMetric(base) {
  const text = await fetch(`${base}/metrics`).then((r) => r.text(), () => '');
  const m = /^subscription_records_database_replica_lag_seconds\{[^}]*replica="1"[^}]*\} (\S+)$/m.exec(text);
  return m ? Number(m[1]) : undefined;
}

async function phase(n, { pair, brokers, topic, end, users, withLookups }) {
  const name = `bench_lag_${n}`;
  const admin = new pg.Client({ connectionString: pair.primary });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = withDb(pair.primary, name);
  const readUrl = withDb(pair.standbys[0], name);
  const ds = await new DataSource(dataSourceOptions(url, { poolSize: 2, applicationName: 'bench-lag' })).initialize();
  await runMigrations(ds);
  const primary = new pg.Client({ connectionString: url });
  await primary.connect();
  // the standby has the database once it has replayed its creation
  const standby = await connectWhenReady(readUrl);
  const storedSql = `SELECT coalesce(sum(next_offset), 0)::bigint AS n FROM read_model.projection_offsets WHERE topic = $1`;
  const stored = async (client) => Number((await client.query(storedSql, [topic])).rows[0].n);

  const consumerPort = await freePort();
  const consumer = service({ DATABASE_URL: url, DATABASE_READ_URL: readUrl, PORT: String(consumerPort), KAFKA_BROKERS: brokers, KAFKA_TOPIC: topic, KAFKA_GROUP_ID: `lag-${topic}-${n}` });
  let api;
  let apiPort;
  let lookups;
  if (withLookups) {
    apiPort = await freePort();
    api = service({ DATABASE_URL: url, DATABASE_READ_URL: readUrl, PORT: String(apiPort), CONSUMER_ENABLED: 'false', DOCS_UI_ENABLED: 'false' });
    await waitHttp(`http://127.0.0.1:${apiPort}/health/live`);
  }
  await waitHttp(`http://127.0.0.1:${consumerPort}/health/live`);
  while ((await stored(primary)) === 0) await sleep(50);
  if (withLookups) {
    // from the first stored batch on, over the same window as the projection's rate; users of the topic's big app
    const token = mintToken({ secret: SECRET, appId: 'big-app', scopes: ['customers:read'], ttlSeconds: 3600 });
    const pick = () => encodeURIComponent(users[Math.floor(Math.random() * users.length)]);
    lookups = autocannon({
      url: `http://127.0.0.1:${apiPort}/v2/customers?applicationUsername=${pick()}`,
      connections: CONNECTIONS,
      duration: 3600,
      headers: { authorization: `Bearer ${token}` },
      requests: [{ setupRequest: (req) => ({ ...req, path: `/v2/customers?applicationUsername=${pick()}` }) }],
    });
  }
  const t0 = performance.now();
  const first = await stored(primary);
  const cpu0 = { consumer: cpuSeconds(consumer.pid), api: api ? cpuSeconds(api.pid) : 0 };
  // samples: [ms since t0, events stored on the primary], [ms, events visible on the standby], replication rows, the service's metric
  const onPrimary = [];
  const onStandby = [];
  const behindBytes = [];
  const replayLagMs = [];
  const metric = [];
  let metricTimer = setInterval(async () => {
    const v = await lagMetric(`http://127.0.0.1:${consumerPort}`);
    if (v !== undefined) metric.push(v);
  }, 1000);
  for (;;) {
    const [p, s, r] = await Promise.all([
      stored(primary),
      stored(standby),
      ds.query(`SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::bigint AS bytes, extract(epoch FROM replay_lag) * 1000 AS lag FROM pg_stat_replication`),
    ]);
    const at = performance.now() - t0;
    onPrimary.push([at, p]);
    onStandby.push([at, s]);
    if (r[0]) {
      behindBytes.push(Number(r[0].bytes));
      replayLagMs.push(r[0].lag === null ? 0 : Number(r[0].lag));
    }
    if (p >= end) break;
    await sleep(100);
  }
  const seconds = (performance.now() - t0) / 1000;
  // catching up after the last batch, lookups still running (sampled too: the last batches' visibility is measured here)
  const caughtUpFrom = performance.now();
  for (;;) {
    const s = await stored(standby);
    onStandby.push([performance.now() - t0, s]);
    if (s >= end) break;
    await sleep(20);
  }
  const catchUpMs = Math.round(performance.now() - caughtUpFrom);
  const cpu = { consumer: cpuSeconds(consumer.pid) - cpu0.consumer, api: api ? cpuSeconds(api.pid) - cpu0.api : 0 };
  let lookupResult;
  if (lookups) {
    lookups.stop();
    lookupResult = await lookups;
  }
  clearInterval(metricTimer);
  metricTimer = undefined;
  // visibility: for each primary sample, how much later the standby showed at least as many events
  const visible = [];
  let j = 0;
  let seen = onPrimary[0][1];
  for (const [at, count] of onPrimary) {
    // only samples where the primary shows new batches: the time until the standby shows them too
    if (count === seen) continue;
    seen = count;
    while (j < onStandby.length && onStandby[j][1] < count) j++;
    if (j < onStandby.length) visible.push(Math.max(0, onStandby[j][0] - at));
  }
  await Promise.all([stop(consumer), api ? stop(api) : undefined]);
  await Promise.all([primary.end(), standby.end(), ds.destroy()]);
  const projected = end - first;
  const row = {
    phase: withLookups ? `projection + lookups from the standby (${CONNECTIONS} connections)` : 'projection alone',
    eventsPerSecond: Math.round(projected / seconds),
    lookupsPerSecond: lookupResult ? Math.round(lookupResult.requests.total / lookupResult.duration) : undefined,
    lookupP99: lookupResult?.latency.p99,
    lookupErrors: lookupResult ? lookupResult.non2xx + lookupResult.errors + lookupResult.timeouts : undefined,
    cores: Math.round(((cpu.consumer + cpu.api) / seconds) * 100) / 100,
    // one value per sample where new batches showed on the primary: a few dozen per phase, so p90 and the max
    visibleMs: { n: visible.length, p50: Math.round(pct(visible, 50)), p90: Math.round(pct(visible, 90)), max: Math.round(Math.max(...visible)) },
    replayLagMs: { p50: Math.round(pct(replayLagMs, 50)), p99: Math.round(pct(replayLagMs, 99)), max: Math.round(Math.max(...replayLagMs)) },
    behindKb: { p50: Math.round(pct(behindBytes, 50) / 1024), p99: Math.round(pct(behindBytes, 99) / 1024), max: Math.round(Math.max(...behindBytes) / 1024) },
    metricMaxS: metric.length ? Math.round(Math.max(...metric) * 100) / 100 : undefined,
    catchUpMs,
    samples: onPrimary.length,
  };
  log(JSON.stringify(row));
  return row;
}

async function main() {
  const dir = path.join(os.tmpdir(), 'sr-bench-replica-lag');
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o755);
  const pair = await startReplicaPair({
    bindir: await replicaBinaries(process.env.DATABASE_URL),
    root: dir,
    ports: [await freePort(), await freePort()],
    standbys: 1,
    // the embedded server's settings, durability on, and PostgreSQL's defaults where the pair's are for tests
    // (WAL writer delay, replay never waiting for queries, feedback every second); hot_standby_feedback
    // stays on, as docs/scaling.md advises
    settings: [
      ...writeHeavySettings(os.totalmem()),
      'fsync = on',
      'full_page_writes = on',
      `wal_writer_delay = '${args['wal-writer-delay']}'`,
      'max_standby_streaming_delay = 30s',
      'wal_receiver_status_interval = 10s',
    ],
  });
  let broker;
  try {
    let brokers = process.env.KAFKA_BROKERS;
    if (!brokers) {
      broker = await startKafkaBroker({ fresh: true });
      brokers = broker.brokers;
    }
    const kafka = new Kafka({ clientId: 'replica-lag', brokers: brokers.split(','), logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    const topic = `replica-lag-${Date.now()}`;
    await admin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS }, { topic: `${topic}.dlq`, numPartitions: 1 }], waitForLeaders: true });
    const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner, idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const users = new Set();
    await sendEvents(producer, topic, (function* () {
      for (const event of generateEvents({ seed: 42, events: EVENTS, order: 'time' })) {
        if (event.appid === 'big-app' && event.data.applicationUsername) users.add(event.data.applicationUsername);
        yield event;
      }
    })());
    await producer.disconnect();
    const end = (await admin.fetchTopicOffsets(topic)).reduce((s, p) => s + Number(p.high), 0);
    await admin.disconnect();
    log(`${end} events in ${PARTITIONS} partitions of ${topic}`);
    const load0 = os.loadavg()[0];
    const rows = [];
    for (const [n, withLookups] of [false, true].entries()) rows.push(await phase(n, { pair, brokers, topic, end, users: [...users], withLookups }));
    const load1 = os.loadavg()[0];

    const lines = [
      '# Replica lag under load',
      '',
      `Generated by \`node bench/replica-lag.mjs --events ${EVENTS} --connections ${CONNECTIONS} --wal-writer-delay ${args['wal-writer-delay']}\` (after \`npx nest build\`) on ${new Date().toISOString().slice(0, 10)}, ` +
        `${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown CPU'}), Node ${process.version}; a PostgreSQL primary and one streaming standby (test/setup/replica-pair.mjs, ` +
        `${process.env.DATABASE_URL ? "DATABASE_URL's server's" : "the embedded package's"} binaries; shared_buffers as the embedded server's, fsync on, wal_writer_delay ${args['wal-writer-delay']} (PostgreSQL's default is 200ms), max_standby_streaming_delay 30 s and wal_receiver_status_interval 10 s (the defaults), hot_standby_feedback on) ` +
        `and ${process.env.KAFKA_BROKERS ? 'KAFKA_BROKERS' : 'one local Kafka broker'}, all on the same machine; the service as \`node ${SERVICE_NODE_FLAGS.join(' ')} dist/main.js\`. ` +
        `Load average (1 min) ${load0.toFixed(2)} at the start, ${load1.toFixed(2)} at the end.`,
      '',
      `${end.toLocaleString('en')} generated events in time order with random ids, ${PARTITIONS} partitions, projected from the start by one instance into a fresh database on the primary, per phase. ` +
        'The second phase adds an API-only instance reading from the standby (`DATABASE_READ_URL`), asked for one random user per request.',
      '',
      '- **visible on the standby**: for each 100 ms sample where the offsets stored on the primary had moved (every projected batch stores its offsets in its own transaction), how much later the standby showed at least as many: commit on the primary to readable on the standby, to the sampling step; one value per such sample (their number in brackets), so p90 and the max rather than a p99;',
      "- **replay lag**: `pg_stat_replication.replay_lag` on the primary (PostgreSQL's own time from a WAL flush on the primary to its replay on the standby);",
      "- **replay behind**: bytes of WAL the primary has written that the standby has not replayed (`pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)`);",
      "- **service's metric**: the highest `subscription_records_database_replica_lag_seconds` the consumer instance reported (read every second; it polls every 2 s);",
      '- **catch-up**: from the last batch stored on the primary to the standby showing it (lookups still running in the second phase).',
      '',
      '| phase | events/s | lookups/s (p99 ms) | visible on the standby p50 / p90 / max ms (samples) | replay lag p50 / p99 / max ms | replay behind p50 / p99 / max KiB | service\'s metric, max s | catch-up ms |',
      '|---|---|---|---|---|---|---|---|',
      ...rows.map(
        (r) =>
          `| ${r.phase} | ${r.eventsPerSecond.toLocaleString('en')} | ${r.lookupsPerSecond === undefined ? '' : `${r.lookupsPerSecond.toLocaleString('en')} (${r.lookupP99})${r.lookupErrors ? `, ${r.lookupErrors} errors` : ''}`} | ` +
          `${r.visibleMs.p50} / ${r.visibleMs.p90} / ${r.visibleMs.max} (${r.visibleMs.n}) | ${r.replayLagMs.p50} / ${r.replayLagMs.p99} / ${r.replayLagMs.max} | ${r.behindKb.p50} / ${r.behindKb.p99} / ${r.behindKb.max} | ${r.metricMaxS ?? 'n/a'} | ${r.catchUpMs} |`,
      ),
      '',
    ];
    // PostgreSQL's default WAL writer delay is the reference; other settings are kept beside it
    const file = `docs/benchmarks-replica-lag${args['wal-writer-delay'] === '200ms' ? '' : `-wal-writer-${args['wal-writer-delay']}`}.md`;
    writeFileSync(path.join(root, file), lines.join('\n'));
    console.log(lines.join('\n'));
    log(`wrote ${file}`);
  } finally {
    await broker?.destroy();
    await pair.stop();
    rmSync(pair.dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
