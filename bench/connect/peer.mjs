// The benchmark's peer (npm run bench -- --peer connect): Kafka Connect (ConnectStandalone) with the
// Debezium JDBC sink, upserting one flat row per transaction.updated into a table with the
// project's transactions DDL. Worker and plugin come from Maven Central like the test broker
// (bench/connect/*-pom.xml), run with the machine's Java; nothing is downloaded at run time beyond
// the first Maven resolution (cached in ~/.m2).
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');

/** Why the peer cannot run here, or undefined when it can. */
export function peerUnavailable() {
  for (const tool of ['mvn', 'java']) {
    try {
      execFileSync(tool, ['-version'], { stdio: 'ignore' });
    } catch {
      return `\`${tool}\` is not installed (Kafka Connect and the Debezium JDBC sink are resolved with Maven and run with Java)`;
    }
  }
  return undefined;
}

const digest = (file) => createHash('sha256').update(readFileSync(path.join(here, file))).digest('hex').slice(0, 16);

function workerClasspath() {
  const cache = path.join(root, '.tmp', `connect-classpath-${digest('worker-pom.xml')}.txt`);
  if (!existsSync(cache)) {
    mkdirSync(path.dirname(cache), { recursive: true });
    execFileSync('mvn', ['-q', '-B', '-f', path.join(here, 'worker-pom.xml'), 'dependency:build-classpath', `-Dmdep.outputFile=${cache}`], { stdio: 'inherit', timeout: 600_000 });
  }
  return readFileSync(cache, 'utf8').trim();
}

/** The connector and its libraries, without what the worker already loads (Kafka, Jackson, compression, SLF4J). */
function pluginDirectory() {
  const dir = path.join(root, '.tmp', `connect-plugins-${digest('plugin-pom.xml')}`, 'debezium-connector-jdbc');
  if (!existsSync(dir)) {
    execFileSync('mvn', ['-q', '-B', '-f', path.join(here, 'plugin-pom.xml'), 'dependency:copy-dependencies', `-DoutputDirectory=${dir}`, '-DincludeScope=runtime'], { stdio: 'inherit', timeout: 600_000 });
    for (const jar of readdirSync(dir)) if (/^(jackson-|lz4-|snappy-|zstd-|kafka-clients-|connect-api-|slf4j-api-)/.test(jar)) rmSync(path.join(dir, jar));
  }
  return path.dirname(dir);
}

const TEXT = { type: 'string', optional: true };
const STAMP = { type: 'string', optional: true, name: 'io.debezium.time.ZonedTimestamp' };
const BOOL = { type: 'boolean', optional: true };
const FIELDS = {
  app_id: { type: 'string' }, transaction_id: { type: 'string' }, receipt_id: { type: 'string' }, purchase_id: { type: 'string' },
  product_id: { type: 'string' }, platform: { type: 'string' }, sandbox: BOOL, purchase_date: STAMP, last_renewal_date: STAMP,
  renewal_date: STAMP, expiration_date: STAMP, renewal_intent: TEXT, renewal_intent_change_date: STAMP, cancelation_reason: TEXT,
  is_pending: BOOL, is_acknowledged: BOOL, is_consumed: BOOL, is_billing_retry_period: BOOL, is_trial_period: BOOL,
  is_intro_period: BOOL, is_expired: BOOL, grace_period_expiration_date: STAMP, revocation_date: STAMP, is_upgraded: BOOL,
  price_consent_status: TEXT, discount_id: TEXT, quantity: { type: 'int32', optional: true }, amount_usd: { type: 'double', optional: true },
  amount_micros: { type: 'int64', optional: true }, currency: TEXT, occurred_at: { ...STAMP, optional: false },
  first_event_at: { ...STAMP, optional: false }, version_time: { ...STAMP, optional: false }, version_id: { type: 'string' },
};
const SCHEMA = { type: 'struct', name: 'transaction', optional: false, fields: Object.entries(FIELDS).map(([field, t]) => ({ field, optional: false, ...t })) };

/**
 * A transaction row image (transactionRow) as a payload-only JSON message: the schema is given to
 * the converter once (Kafka 4.x `value.converter.schema.content`), not repeated in every message.
 */
export const flatMessage = (row) => JSON.stringify(Object.fromEntries(Object.keys(FIELDS).map((k) => [k, row[k] ?? null])));

export const TUNED = {
  'tasks.max': '2',
  'batch.size': '5000',
  'consumer.override.max.poll.records': '5000',
  'dialect.postgres.unnest.insert.enabled': 'true',
  'use.reduction.buffer': 'true',
};

/**
 * Runs Connect standalone with the sink on `topic` into table `transactions` of `database` on the
 * PostgreSQL server of `postgresUrl` until it
 * is stopped; returns the process and the consumer group whose committed offsets show progress.
 */
export async function startConnect({ brokers, topic, postgresUrl, database, settings, workDir, restPort }) {
  const u = new URL(postgresUrl);
  const plugins = pluginDirectory();
  const classpath = workerClasspath();
  rmSync(workDir, { recursive: true, force: true });
  mkdirSync(workDir, { recursive: true });
  const worker = path.join(workDir, 'worker.properties');
  const connector = path.join(workDir, 'sink.properties');
  const props = (o) => Object.entries(o).map(([k, v]) => `${k}=${v}`).join('\n') + '\n';
  writeFileSync(worker, props({
    'bootstrap.servers': brokers,
    'key.converter': 'org.apache.kafka.connect.storage.StringConverter',
    'value.converter': 'org.apache.kafka.connect.json.JsonConverter',
    'value.converter.schemas.enable': 'true',
    'value.converter.schema.content': JSON.stringify(SCHEMA),
    'offset.storage.file.filename': path.join(workDir, 'offsets'),
    'offset.flush.interval.ms': '500',
    'plugin.path': plugins,
    'listeners': `http://127.0.0.1:${restPort}`,
    'connector.client.config.override.policy': 'All',
  }));
  const name = `jdbc-sink-${Date.now()}`;
  writeFileSync(connector, props({
    name,
    'connector.class': 'io.debezium.connector.jdbc.JdbcSinkConnector',
    topics: topic,
    'connection.url': `jdbc:postgresql://${u.hostname}:${u.port || 5432}/${database}`,
    'connection.username': decodeURIComponent(u.username) || 'postgres',
    'connection.password': decodeURIComponent(u.password),
    'insert.mode': 'upsert',
    'primary.key.mode': 'record_value',
    'primary.key.fields': 'app_id,transaction_id',
    'schema.evolution': 'none',
    'collection.name.format': 'transactions',
    ...settings,
  }));
  const java = process.env.JAVA_HOME ? path.join(process.env.JAVA_HOME, 'bin', 'java') : 'java';
  const child = spawn(java, ['-Xmx2g', '-Dorg.slf4j.simpleLogger.defaultLogLevel=warn', '-cp', classpath, 'org.apache.kafka.connect.cli.ConnectStandalone', worker, connector], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr = (stderr + d).slice(-20_000)));
  child.exited = new Promise((resolve) => child.once('exit', resolve));
  child.lastOutput = () => stderr;
  /** A failed connector or task, with Connect's reason, instead of waiting for progress that never comes. */
  const failure = async () => {
    try {
      const status = await (await fetch(`http://127.0.0.1:${restPort}/connectors/${name}/status`)).json();
      const failed = [status.connector, ...(status.tasks ?? [])].find((t) => t?.state === 'FAILED');
      return failed ? `Kafka Connect ${failed.id === undefined ? 'connector' : `task ${failed.id}`} failed: ${String(failed.trace).slice(0, 2000)}` : undefined;
    } catch {
      return undefined; // REST not up yet
    }
  };
  return { child, groupId: `connect-${name}`, failure };
}
