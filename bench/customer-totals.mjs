// The customer filters' page statements alone, with the service's own SQL (dist/), against a database
// the full benchmark loaded (bench_api: 1M customers): for each filter, the first page and the page
// halfway, the median of 31 runs of the statement that finds the total and the page's start, and of
// the page's own statement (bench/notes.md, "Kept counts for the customer filters' totals" and later).
//   npx nest build && node bench/customer-totals.mjs postgres://postgres:<password>@127.0.0.1:<port>/bench_api
// (the embedded server of `npm run bench -- --size full`: data in /tmp/sr-bench-pg/pg, its password in
// /tmp/sr-bench-pg/pg-password; start it with that install's pg_ctl when the benchmark has stopped it)
import pg from 'pg';
import { parseCustomerFilters } from '../dist/customers/list-customers/customer-filters.js';
import { filteredPageSql as pageSql, filteredPageStartSql as startSql } from '../dist/customers/list-customers/list-customers.sql.js';

const url = process.argv[2];
if (!url) throw new Error('usage: node bench/customer-totals.mjs <postgres url of the benchmark database>');
const client = new pg.Client({ connectionString: url });
await client.connect();
const [{ app_id: appId }] = (await client.query('SELECT app_id FROM read_model.customers LIMIT 1')).rows;
const [{ cells }] = (await client.query('SELECT count(*)::int AS cells FROM read_model.customer_end_weeks WHERE app_id = $1', [appId])).rows;
const now = new Date();
const DAY = 86_400_000;
const at = (days) => new Date(now.getTime() + days * DAY).toISOString();
const filters = [
  'status=active',
  'status=expired',
  'renewalIntent=Lapse',
  'productId=apple:pro_monthly',
  'status=expired&productId=apple:pro_monthly&renewalIntent=Renew',
  `expiresAfter=${at(-30)}`,
  `expiresBefore=${at(30)}`,
  `expiresAfter=${at(0)}&expiresBefore=${at(7)}`,
  `status=active&renewalIntent=Lapse&expiresBefore=${at(7)}`,
  `renewalIntent=Lapse&expiresAfter=${at(0)}&expiresBefore=${at(7)}`,
  `status=expired&expiresAfter=${at(-30)}`,
];
const median = async (statement) => {
  const times = [];
  let rows;
  for (let i = 0; i < 31; i++) {
    const started = performance.now();
    rows = (await client.query({ name: statement.name, text: statement.sql, values: statement.params })).rows;
    times.push(performance.now() - started);
  }
  return { rows, ms: times.sort((a, b) => a - b)[15] };
};
console.log(`${new Date().toISOString()}: app ${appId}, ${cells} cells in customer_end_weeks`);
for (const filter of filters) {
  const f = parseCustomerFilters(Object.fromEntries(new URLSearchParams(filter)));
  const total = Number((await median(startSql({ appId, skip: 0, limit: 100, filters: f }, now))).rows[0].total);
  for (const skip of [0, Math.floor(total / 2)]) {
    const q = { appId, skip, limit: 100, filters: f };
    const start = await median(startSql(q, now));
    const found = start.rows[0];
    const page = found.days === null ? { ms: 0, rows: [] } : await median(pageSql(q, now, found.days, skip - Number(found.before)));
    console.log(`${filter.replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, (d) => `${Math.round((Date.parse(d) - now.getTime()) / DAY)}d`)} skip ${skip}: total ${total}, start ${start.ms.toFixed(2)} ms, page ${page.ms.toFixed(2)} ms (${page.rows.length} rows)`);
  }
}
await client.end();
