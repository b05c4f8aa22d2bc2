// Time per projection statement, for comparing two checkouts on identical events:
//   [PROFILE_ORDER=time] node bench/profile-projection.mjs <checkout dir, built> <scratch database name> [events, default 60000]
// Generates the events with this checkout's generator (seed 42), drops and creates the database on
// the PostgreSQL at 127.0.0.1:5432 (PROFILE_ADMIN_URL to choose another), migrates it with the given
// checkout, and applies the events in 3000-event batches through that checkout's applyBatch.
// PROFILE_SQL='…' runs after the migrations (what an index or a table setting costs: DROP INDEX,
// ALTER TABLE … SET (fillfactor = …)).
// PROFILE_TOP=N prints the N slowest statements (default 14).
// At the end it prints how many row updates of each read-model table were HOT (no index written).
const { default: pg } = await import(new URL('../node_modules/pg/lib/index.js', import.meta.url).href);
const [repoArg, dbname, count = '60000'] = process.argv.slice(2);
const repo = (await import('node:path')).resolve(repoArg);
const ADMIN = process.env.PROFILE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const { DataSource, EntityManager } = await import(`${repo}/node_modules/typeorm/index.js`);
const { dataSourceOptions } = await import(`${repo}/dist/database/data-source-options.js`);
const { runMigrations } = await import(`${repo}/dist/database/migrate.js`);
const { applyBatch } = await import(`${repo}/dist/projection/apply-batch.js`);
const { generateEvents } = await import(new URL('../dist/generate/generate-events.js', import.meta.url).href);
const admin = new pg.Client({ connectionString: ADMIN });
await admin.connect();
await admin.query(`DROP DATABASE IF EXISTS ${dbname}`);
await admin.query(`CREATE DATABASE ${dbname}`);
await admin.end();
const ds = await new DataSource(dataSourceOptions(Object.assign(new URL(ADMIN), { pathname: `/${dbname}` }).toString(), { poolSize: 4 })).initialize();
await runMigrations(ds);
if (process.env.PROFILE_SQL) await ds.query(process.env.PROFILE_SQL);
// PROFILE_ORDER=time: as a store would send them, every customer's events interleaved in time order
// (the generator writes one customer's whole history after another). Otherwise streamed, so runs of
// millions of events fit in memory.
function* encoded() {
  let events = generateEvents({ seed: 42, events: Number(count) });
  if (process.env.PROFILE_ORDER === 'time') events = [...events].sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0));
  for (const e of events) yield Buffer.from(JSON.stringify(e));
}
const times = new Map();

const orig = EntityManager.prototype.query;
EntityManager.prototype.query = async function (sql, params) {
  const t = performance.now();
  try { return await orig.call(this, sql, params); } finally {
    const k = sql.trim().replace(/\s+/g, ' ').slice(0, 60);
    const e = times.get(k) ?? [0, 0]; e[0] += performance.now() - t; e[1]++; times.set(k, e);
  }
};
const t0 = performance.now();
// the rate per tenth of the run shows whether the cost per event grows with the tables, and the
// statements that took most of that tenth which
const window = Math.max(3000, Math.round(Number(count) / 10 / 3000) * 3000);
let w0 = t0;
let before = new Map();
const report = (from, to) => {
  const grew = [...times].map(([k, [ms]]) => [k, ms - (before.get(k) ?? 0)]).sort((a, b) => b[1] - a[1]).slice(0, 4);
  console.log(`  events ${from}-${to}: ${Math.round((to - from) / ((performance.now() - w0) / 1000))} ev/s; ${grew.map(([k, ms]) => `${k.slice(0, 32)} ${ms.toFixed(0)} ms`).join(' | ')}`);
  before = new Map([...times].map(([k, [ms]]) => [k, ms]));
  w0 = performance.now();
};
let i = 0;
let messages = [];
const flush = async () => {
  await applyBatch(ds, { topic: 't', partition: 0, messages });
  messages = [];
  if (i % window === 0) report(i - window, i);
};
for (const value of encoded()) {
  messages.push({ offset: String(i++), key: null, value, timestamp: String(Date.now()) });
  if (messages.length === 3000) await flush();
}
if (messages.length > 0) await flush();
const length = i;
const total = performance.now() - t0;
console.log(`${repo}: ${length} events in ${(total / 1000).toFixed(1)} s = ${Math.round(length / (total / 1000))} ev/s`);
for (const [k, [ms, n]] of [...times].sort((a, b) => b[1][0] - a[1][0]).slice(0, Number(process.env.PROFILE_TOP ?? 14))) console.log(`${ms.toFixed(0).padStart(7)} ms ${String(n).padStart(4)}x  ${k}`);
// a backend reports its table counts when idle for 10 s at the latest (PGSTAT_IDLE_INTERVAL)
await new Promise((r) => setTimeout(r, 11_000));
for (const r of await ds.query(`SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE schemaname = 'read_model' AND n_tup_upd > 0 ORDER BY relname`))
  console.log(`${r.relname}: ${r.n_tup_ins} inserted, ${r.n_tup_upd} updated, ${r.n_tup_hot_upd} of them HOT`);
await ds.destroy();
