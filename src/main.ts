import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { createPino, PinoNestLogger } from './common/logger.js';
import { ConfigError, loadConfig } from './config/app-config.js';
import { openDatabaseServer } from './database/database-server.js';
import { OperatorError } from './common/operator-error.js';
import { createHttpApp } from './http-app.js';
import type { VerificationKeys } from './auth/signing-keys.js';
import { VERIFICATION_KEYS } from './auth/tokens.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const log = createPino(config.logLevel, undefined, config.logFormat);
  Logger.overrideLogger(new PinoNestLogger(log));
  for (const warning of config.warnings) log.warn(warning);

  // Graceful stop: refuse new connections, let in-flight requests and the projection batch finish
  // (consumers commit in beforeApplicationShutdown), release the database, then exit 0. The handlers
  // are in place before anything starts: a supervisor's SIGTERM during start-up (while the embedded
  // PostgreSQL starts or migrations run) must not kill this process and orphan that server.
  let release: (() => Promise<void>) | undefined;
  let starting = true;
  let stopping = false;
  const stop = () => {
    // Armed only once the start-up step under way has finished: a forced exit in the middle of it
    // would skip release() and orphan the embedded PostgreSQL.
    const force = setTimeout(() => {
      log.error('shutdown took longer than 30 s; exiting');
      process.exit(1);
    }, 30_000);
    force.unref();
    return release!().then(
      () => process.exit(0),
      (error: unknown) => {
        log.error({ err: error }, 'error during shutdown');
        process.exit(1);
      },
    );
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      if (stopping) return;
      stopping = true;
      log.info({ signal }, 'shutting down');
      // During start-up the step under way finishes first (stopping a database that migrations are
      // using would only turn the stop into errors), then sees `stopping` and releases what is up.
      if (!starting) void stop();
    });
  }

  const database = await openDatabaseServer(config);
  release = () => database.stop();
  if (stopping) return void stop();
  let app: Awaited<ReturnType<typeof createHttpApp>> | undefined;
  try {
    app = await createHttpApp({ config, database, pino: log });
    release = () => app!.close();
    if (stopping) return void stop();
    await app.listen({ port: config.port, host: config.host });
  } catch (error) {
    // An embedded PostgreSQL this process started must not outlive a failed start (a port in use,
    // a failed migration): closing the app stops it through the database module, or stop it here.
    await (app ? app.close() : database.stop()).catch((stopError: unknown) => log.error({ err: stopError }, 'could not stop the database server'));
    throw error;
  }
  starting = false;
  if (stopping) return void stop();

  const db = app.get(DataSource);
  const [{ generation }] = await db.query('SELECT generation FROM public.read_model_generation');
  const stored: { topic: string; partition: number; next_offset: string }[] = await db.query(
    'SELECT topic, partition, next_offset::text AS next_offset FROM read_model.projection_offsets ORDER BY topic, partition',
  );
  log.info(
    {
      port: config.port,
      generation,
      storedOffsets: Object.fromEntries(stored.map((o) => [`${o.topic}/${o.partition}`, o.next_offset])),
      consumer: config.consumerEnabled ? 'enabled' : 'disabled (API only)',
      database: database.mode === 'embedded' ? `embedded PostgreSQL in ${config.dataDir}` : 'external PostgreSQL (DATABASE_URL)',
      eventSource: config.kafka ? `Kafka ${config.kafka.brokers.join(',')} topic ${config.kafka.topic}` : 'embedded event log',
    },
    'subscription records service started',
  );

  const keys = app.get<VerificationKeys>(VERIFICATION_KEYS);
  if (keys.generatedSecretPath) {
    log.info(
      `no JWT_SECRET configured: using the generated secret in ${keys.generatedSecretPath}. ` + 'Mint a token with: npm run cli -- token --app <app-id>',
    );
  }
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) {
    console.error(error.message);
    process.exit(78); // EX_CONFIG
  }
  // What the operator can act on gets one line (a damaged file in DATA_DIR, a port in use: each
  // named with its remedy, EmbeddedPostgresError among them); anything else keeps its stack.
  if ((error as { code?: unknown }).code === 'EADDRINUSE') {
    const { address, port } = error as { address?: string; port?: number };
    console.error(`error: the HTTP port ${port} is already in use on ${address}: stop what listens there or set PORT`);
  } else {
    console.error(error instanceof OperatorError ? `error: ${error.message}` : error);
  }
  process.exit(1);
});
