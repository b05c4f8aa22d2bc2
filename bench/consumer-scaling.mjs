#!/usr/bin/env node
// How the projection's rate grows with partitions and instances (issue 25, "Scaling the consumers").
// Never part of `npm test`:
//   npx nest build && node bench/consumer-scaling.mjs [--events 100000] [--partitions 6]
// One topic of generated events (in the generator's order, keyed by receipt) is consumed from the
// start by each layout in turn, each into a fresh database with its own consumer group:
// instances x KAFKA_PARTITIONS_CONCURRENCY. Reported per layout: events/s, CPU per event (the
// service processes, PostgreSQL's processes and the broker, from /proc), and the share of
// PostgreSQL backend samples waiting on a lock (rows shared between partitions: day counts,
// summaries). Writes docs/benchmarks-consumer-scaling.md. PostgreSQL: DATABASE_URL or embedded;
// Kafka: KAFKA_BROKERS or a broker started from Maven Central artifacts.
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Kafka, logLevel, Partitioners } from 'kafkajs';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { freePort, startKafkaBroker } from '../test/kafka/broker.mjs';
import { dataSourceOptions } from '../dist/database/data-source-options.js';
import { runMigrations } from '../dist/database/migrate.js';
import { startEmbeddedPostgres } from '../dist/database/embedded-postgres.js';
import { generateEvents } from '../dist/generate/generate-events.js';
import { sendEvents } from './clients.mjs';
import { cpuSeconds, postgresCpu } from './proc.mjs';
import { SERVICE_NODE_FLAGS } from './service-flags.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: args } = parseArgs({ options: { events: { type: 'string', default: '100000' }, partitions: { type: 'string', default: '6' } } });
const EVENTS = Number(args.events);
const PARTITIONS = Number(args.partitions);
const LAYOUTS = [
  { instances: 1, concurrency: 1 },
  { instances: 1, concurrency: 2 },
  { instances: 1, concurrency: 3 },
  { instances: 2, concurrency: 1 },
  { instances: 2, concurrency: 2 },
  { instances: 3, concurrency: 2 },
];
const SECRET = 'bench-secret-bench-secret-bench-secret-0123';
const log = (...m) => console.error(`[scaling ${new Date().toISOString().slice(11, 19)}]`, ...m);

async function main() {
  let pgServer;
  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    const dir = path.join(os.tmpdir(), 'sr-scaling-pg');
    mkdirSync(dir, { recursive: true });
    chmodSync(dir, 0o755);
    pgServer = await startEmbeddedPostgres(dir, await freePort());
    adminUrl = pgServer.url;
  }
  let broker;
  let brokers = process.env.KAFKA_BROKERS;
  if (!brokers) {
    broker = await startKafkaBroker({ fresh: true });
    brokers = broker.brokers;
  }
  const kafka = new Kafka({ clientId: 'scaling', brokers: brokers.split(','), logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  const topic = `scaling-${Date.now()}`;
  await admin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS }, { topic: `${topic}.dlq`, numPartitions: 1 }], waitForLeaders: true });
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner, idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  await sendEvents(producer, topic, generateEvents({ seed: 42, events: EVENTS }));
  await producer.disconnect();
  const end = (await admin.fetchTopicOffsets(topic)).reduce((s, p) => s + Number(p.high), 0);
  log(`${end} events in ${PARTITIONS} partitions of ${topic}`);

  const rows = [];
  for (const [n, layout] of LAYOUTS.entries()) {
    const name = `bench_scaling_${n}`;
    const c = new pg.Client({ connectionString: adminUrl });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c.query(`CREATE DATABASE ${name}`);
    await c.end();
    const url = Object.assign(new URL(adminUrl), { pathname: `/${name}` }).toString();
    const ds = await new DataSource(dataSourceOptions(url, { poolSize: 2, applicationName: 'bench-scaling' })).initialize();
    await runMigrations(ds);
    const stored = async () => Number((await ds.query(`SELECT coalesce(sum(next_offset), 0)::bigint AS n FROM read_model.projection_offsets WHERE topic = $1`, [topic]))[0].n);

    const group = `scaling-${topic}-${n}`;
    const services = [];
    for (let i = 0; i < layout.instances; i++) {
      services.push(
        spawn(process.execPath, [...SERVICE_NODE_FLAGS, path.join(root, 'dist/main.js')], {
          env: {
            PATH: process.env.PATH, NODE_ENV: 'production', LOG_LEVEL: 'warn', JWT_SECRET: SECRET, DATABASE_URL: url, PORT: String(await freePort()),
            KAFKA_BROKERS: brokers, KAFKA_TOPIC: topic, KAFKA_GROUP_ID: group, KAFKA_PARTITIONS_CONCURRENCY: String(layout.concurrency),
          },
          stdio: ['ignore', 'inherit', 'inherit'],
        }),
      );
    }
    // Timed from the first stored offset (every instance has joined the group and been assigned by then, or soon after)
    while ((await stored()) === 0) await new Promise((r) => setTimeout(r, 50));
    const first = await stored();
    const t0 = performance.now();
    const serviceCpu0 = services.map((s) => cpuSeconds(s.pid));
    const brokerCpu0 = broker ? cpuSeconds(broker.pid) : 0;
    const pgCpu = postgresCpu();
    let samples = 0;
    let lockWaits = 0;
    const watcher = new pg.Client({ connectionString: url });
    await watcher.connect();
    for (;;) {
      const [{ active, waiting }] = (
        await watcher.query(
          `SELECT count(*) FILTER (WHERE state = 'active')::int AS active, count(*) FILTER (WHERE state = 'active' AND wait_event_type = 'Lock')::int AS waiting
           FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
        )
      ).rows;
      samples += active;
      lockWaits += waiting;
      if ((await stored()) >= end) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const seconds = (performance.now() - t0) / 1000;
    const projected = end - first;
    const serviceCpu = services.reduce((s, p, i) => {
      const now = cpuSeconds(p.pid);
      if (now === undefined) throw new Error(`service instance ${i + 1} of layout ${n} exited before the topic was consumed`);
      return s + now - serviceCpu0[i];
    }, 0);
    const databaseCpu = pgCpu();
    const brokerCpu = broker ? cpuSeconds(broker.pid) - brokerCpu0 : NaN;
    await watcher.end();
    for (const s of services) s.kill('SIGTERM');
    await Promise.all(services.map((s) => new Promise((r) => (s.exitCode !== null ? r() : s.once('exit', r)))));
    await ds.destroy();
    const row = {
      ...layout,
      eventsPerSecond: Math.round(projected / seconds),
      serviceUsPerEvent: Math.round((serviceCpu / projected) * 1e6),
      postgresUsPerEvent: Math.round((databaseCpu / projected) * 1e6),
      brokerUsPerEvent: Math.round((brokerCpu / projected) * 1e6),
      coresBusy: Math.round(((serviceCpu + databaseCpu + (Number.isNaN(brokerCpu) ? 0 : brokerCpu)) / seconds) * 100) / 100,
      lockWaitShare: samples ? Math.round((lockWaits / samples) * 100) : 0,
    };
    rows.push(row);
    log(JSON.stringify(row));
  }
  await admin.disconnect();
  await broker?.stop();
  await pgServer?.stop();

  const [load1] = os.loadavg();
  const lines = [
    '# Projection rate by partitions and instances',
    '',
    `Generated by \`node bench/consumer-scaling.mjs --events ${EVENTS} --partitions ${PARTITIONS}\` on ${new Date().toISOString().slice(0, 10)}, ` +
      `${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown CPU'}), Node ${process.version}, PostgreSQL ${process.env.DATABASE_URL ? 'from DATABASE_URL' : 'embedded'}, ` +
      `Kafka ${process.env.KAFKA_BROKERS ? 'from KAFKA_BROKERS' : 'one local broker'} on the same machine; load average at the end ${load1.toFixed(2)}.`,
    '',
    `${EVENTS.toLocaleString('en')} generated events (the generator's order, keyed by receipt) in ${PARTITIONS} partitions, consumed from the start into a fresh database by each layout.`,
    'CPU per event: user + system time from /proc of the service processes, of every PostgreSQL process, and of the broker, divided by the events projected.',
    'Lock waits: the share of active PostgreSQL backends of that database seen waiting on a lock (sampled every 50 ms).',
    '',
    '| instances | partitions each instance projects at once | events/s | service µs/event | PostgreSQL µs/event | broker µs/event | cores busy | lock waits |',
    '|---|---|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.instances} | ${r.concurrency} | ${r.eventsPerSecond.toLocaleString('en')} | ${r.serviceUsPerEvent} | ${r.postgresUsPerEvent} | ${Number.isNaN(r.brokerUsPerEvent) ? 'n/a' : r.brokerUsPerEvent} | ${r.coresBusy} | ${r.lockWaitShare}% |`),
    '',
  ];
  writeFileSync(path.join(root, 'docs/benchmarks-consumer-scaling.md'), lines.join('\n'));
  log('wrote docs/benchmarks-consumer-scaling.md');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
