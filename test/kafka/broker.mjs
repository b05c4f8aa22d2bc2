// A real single-node Apache Kafka (KRaft) for the test suite, resolved from Maven Central with the
// machine's Maven and run with its Java: no Docker, no tarball, nothing downloaded at run time
// beyond the first Maven resolution (cached in ~/.m2).
import { spawn, execFileSync } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { existsSync, mkdirSync, readFileSync, writeFileSync, rmSync, openSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// The readiness check below uses kafkajs, whose request queue sets a negative timer on Node 24+
// (tulios/kafkajs#1751): the same narrow filter as src/ingestion/kafka/kafka-client.ts, which this
// file cannot import before the build.
const emitWarning = process.emitWarning;
process.emitWarning = function (warning, ...rest) {
  const type = typeof rest[0] === 'string' ? rest[0] : rest[0]?.type;
  if (type === 'TimeoutNegativeWarning' && /kafkajs[\\/]src[\\/]network[\\/]requestQueue/.test(new Error().stack ?? '')) return;
  return emitWarning.call(this, warning, ...rest);
};

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');

/** Maven's classpath for test/kafka/pom.xml, cached per pom content. */
export function kafkaClasspath() {
  const pom = path.join(here, 'pom.xml');
  const digest = createHash('sha256').update(readFileSync(pom)).digest('hex').slice(0, 16);
  const cacheDir = path.join(root, '.tmp');
  const cache = path.join(cacheDir, `kafka-classpath-${digest}.txt`);
  if (!existsSync(cache)) {
    requireTool('mvn', 'Maven');
    mkdirSync(cacheDir, { recursive: true });
    process.stderr.write("resolving Kafka's classpath from Maven Central (test/kafka/pom.xml; once per pom)\n");
    // Maven's console library writes colour resets even in quiet batch mode: its output is shown only
    // when it fails, without escape sequences.
    try {
      execFileSync('mvn', ['-q', '-B', '-Dstyle.color=never', '-f', pom, 'dependency:build-classpath', `-Dmdep.outputFile=${cache}`], {
        stdio: ['ignore', 'pipe', 'pipe'],
        timeout: 600_000,
      });
    } catch (error) {
      // eslint-disable-next-line no-control-regex -- Maven's colour codes, taken out of the output shown
      const output = `${error.stdout ?? ''}${error.stderr ?? ''}`.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '');
      throw new Error(`Maven could not resolve Kafka's classpath (test/kafka/pom.xml):\n${output.trim() || error.message}`);
    }
  }
  return readFileSync(cache, 'utf8').trim();
}

/** The suite's Kafka broker needs these; say so in one line instead of a spawn ENOENT stack. */
function requireTool(command, name) {
  try {
    execFileSync(command, ['-version'], { stdio: 'ignore' });
  } catch (error) {
    if (error.code === 'ENOENT') {
      throw new Error(
        `the tests run a Kafka broker with ${name} (\`${command}\`), which is not installed: install Java 17+ and Maven, or set KAFKA_BROKERS to a broker to use`,
      );
    }
  }
}

/** `count` distinct free ports: all are held open until every one is known. */
export async function freePorts(count) {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise((resolve, reject) => {
          const server = net.createServer();
          server.once('error', reject);
          server.listen(0, '127.0.0.1', () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((s) => s.address().port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

export async function freePort() {
  return (await freePorts(1))[0];
}

/**
 * Starts kafka.Kafka on loopback with a KRaft log dir formatted by StorageTool (--standalone). A
 * `dir` that already holds a formatted broker keeps its data unless `fresh`; without `dir`, a new
 * one is made. Resolves once the broker serves metadata.
 */
export async function startKafkaBroker({ dir, port, controllerPort, fresh } = {}) {
  const classpath = kafkaClasspath();
  dir ??= path.join(root, '.tmp', `kafka-${process.pid}-${Date.now()}`);
  if (port === undefined || controllerPort === undefined) {
    const [a, b] = await freePorts(2);
    port ??= a === controllerPort ? b : a;
    controllerPort ??= b === port ? a : b;
  }
  fresh ??= !existsSync(path.join(dir, 'data', 'meta.properties'));
  if (fresh) rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const logDir = path.join(dir, 'data');
  const config = path.join(dir, 'server.properties');
  writeFileSync(
    config,
    [
      'process.roles=broker,controller',
      'node.id=1',
      `controller.quorum.bootstrap.servers=127.0.0.1:${controllerPort}`,
      `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
      `advertised.listeners=PLAINTEXT://127.0.0.1:${port}`,
      'controller.listener.names=CONTROLLER',
      'inter.broker.listener.name=PLAINTEXT',
      'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
      `log.dirs=${logDir}`,
      'num.partitions=3',
      'offsets.topic.replication.factor=1',
      'offsets.topic.num.partitions=3',
      'transaction.state.log.replication.factor=1',
      'transaction.state.log.min.isr=1',
      'share.coordinator.state.topic.replication.factor=1',
      'share.coordinator.state.topic.min.isr=1',
      'group.initial.rebalance.delay.ms=0',
      'auto.create.topics.enable=true',
      'log.flush.interval.messages=9223372036854775807',
      '',
    ].join('\n'),
  );
  const java = process.env.JAVA_HOME ? path.join(process.env.JAVA_HOME, 'bin', 'java') : 'java';
  requireTool(java, 'Java');
  const format = () => {
    const clusterId = Buffer.from(randomUUID().replaceAll('-', ''), 'hex').toString('base64url');
    try {
      // `--cluster-id=<id>`: a base64url id can start with '-', which argparse would take for a flag
      execFileSync(java, ['-cp', classpath, 'kafka.tools.StorageTool', 'format', '--standalone', `--cluster-id=${clusterId}`, '-c', config], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch (error) {
      throw new Error(`kafka StorageTool format failed: ${error.stderr?.toString() ?? error.message}`);
    }
  };
  if (fresh) format();

  const start = () => {
    const out = openSync(path.join(dir, 'broker.log'), 'a');
    const child = spawn(
      java,
      ['-Xms256m', '-Xmx768m', '-XX:+UseG1GC', '-Dorg.slf4j.simpleLogger.defaultLogLevel=warn', '-cp', classpath, 'kafka.Kafka', config],
      { stdio: ['ignore', out, out], detached: false },
    );
    return child;
  };
  let child = start();
  await waitForMetadata(port, 90_000, () => child.exitCode !== null);

  const broker = {
    brokers: `127.0.0.1:${port}`,
    dir,
    get pid() {
      return child.pid;
    },
    /** Stops the broker (SIGTERM, then SIGKILL) and keeps its data. */
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
    /** Starts it again on the same ports and data: a broker restart. Resolves once metadata is served. */
    async restart() {
      await broker.stop();
      child = start();
      await waitForMetadata(port, 90_000, () => child.exitCode !== null);
    },
    /** Starts it again on the same ports with no data at all: every topic and offset is gone. */
    async restartEmpty() {
      await broker.stop();
      rmSync(logDir, { recursive: true, force: true });
      format();
      child = start();
      await waitForMetadata(port, 90_000, () => child.exitCode !== null);
    },
    async destroy() {
      await broker.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return broker;
}

/** The port answering is not enough: produce right after a restart failed until metadata was served. */
async function waitForMetadata(port, timeoutMs, hasExited) {
  const deadline = Date.now() + timeoutMs;
  await waitForPort(port, timeoutMs, hasExited);
  const admin = new Kafka({ clientId: 'broker-ready-check', brokers: [`127.0.0.1:${port}`], logLevel: logLevel.NOTHING, retry: { retries: 0 } }).admin();
  while (Date.now() < deadline) {
    if (hasExited()) throw new Error('Kafka broker exited during start-up; see its broker.log');
    try {
      await admin.connect();
      const { brokers, controller } = await admin.describeCluster();
      await admin.disconnect();
      if (brokers.length > 0 && controller !== null && controller !== undefined) return;
    } catch {
      await admin.disconnect().catch(() => undefined);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`Kafka broker on ${port} did not serve metadata within ${timeoutMs} ms`);
}

async function waitForPort(port, timeoutMs, hasExited) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (hasExited()) throw new Error('Kafka broker exited during start-up; see its broker.log');
    const ok = await new Promise((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`Kafka broker did not listen on ${port} within ${timeoutMs} ms`);
}

// `node test/kafka/broker.mjs [--port 9092] [--dir .tmp/kafka-dev] [--fresh]` runs a broker in the
// foreground for manual use. It keeps its data between runs (topics, offsets); --fresh wipes it.
if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const { parseArgs } = await import('node:util');
  let args;
  try {
    ({ values: args } = parseArgs({
      options: {
        port: { type: 'string', default: '9092' },
        dir: { type: 'string', default: path.join(root, '.tmp', 'kafka-dev') },
        fresh: { type: 'boolean', default: false },
        help: { type: 'boolean', default: false },
      },
      strict: true,
    }));
  } catch (error) {
    console.error(`${error.message}\nusage: node test/kafka/broker.mjs [--port 9092] [--dir <dir>] [--fresh]`);
    process.exit(2);
  }
  if (args.help) {
    console.log(
      'usage: node test/kafka/broker.mjs [--port 9092] [--dir <dir>] [--fresh]\n  Runs a single-node Kafka broker on 127.0.0.1 from Maven Central artifacts.\n  --port   listener port (default 9092)\n  --dir    data directory (default .tmp/kafka-dev); kept between runs\n  --fresh  wipe the data directory first (every topic and offset is lost)',
    );
    process.exit(0);
  }
  const broker = await startKafkaBroker({ port: Number(args.port), dir: path.resolve(args.dir), fresh: args.fresh || undefined });
  console.log(`Kafka broker listening on ${broker.brokers} (data in ${broker.dir}${args.fresh ? ', wiped first' : ', kept between runs'}); Ctrl-C stops it`);
  process.on('SIGINT', () => void broker.stop().then(() => process.exit(0)));
}
