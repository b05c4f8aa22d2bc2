// The customer filters' totals and first pages alone, with the service's own SQL (dist/), against a
// database the full benchmark loaded (bench_api: 1M customers): median of 7 runs of each total, one
// run of each first page (bench/notes.md, "Kept counts for the customer filters' totals").
//   npx nest build && node bench/customer-totals.mjs postgres://postgres:<password>@127.0.0.1:<port>/bench_api
// (the embedded server of `npm run bench -- --size full`: data in /tmp/sr-bench-pg/pg, its password in
// /tmp/sr-bench-pg/pg-password; start it with that install's pg_ctl when the benchmark has stopped it)
import pg from 'pg';
import { parseCustomerFilters } from '../dist/customers/list-customers/customer-filters.js';
import { customerTotalSql, filteredCustomersSql } from '../dist/customers/list-customers/list-customers.sql.js';

const url = process.argv[2];
if (!url) throw new Error('usage: node bench/customer-totals.mjs <postgres url of the benchmark database>');
const client = new pg.Client({ connectionString: url });
await client.connect();
const [{ app_id: appId }] = (await client.query('SELECT app_id FROM read_model.customers LIMIT 1')).rows;
const [{ cells }] = (await client.query('SELECT count(*)::int AS cells FROM read_model.customer_filter_counts WHERE app_id = $1', [appId])).rows;
const now = new Date();
const DAY = 86_400_000;
const filters = [
  'status=active',
  'status=expired',
  'renewalIntent=Lapse',
  'productId=apple:pro_yearly',
  `expiresAfter=${new Date(now.getTime() - 30 * DAY).toISOString()}`,
  `expiresBefore=${new Date(now.getTime() + 30 * DAY).toISOString()}`,
  'status=expired&productId=apple:pro_monthly&renewalIntent=Renew',
];
console.log(`${new Date().toISOString()}: app ${appId}, ${cells} cells`);
for (const filter of filters) {
  const q = { appId, skip: 0, limit: 100, filters: parseCustomerFilters(Object.fromEntries(new URLSearchParams(filter))) };
  const total = customerTotalSql(q, now);
  const times = [];
  let counted;
  for (let i = 0; i < 7; i++) {
    const started = performance.now();
    counted = (await client.query(total.sql, total.params)).rows[0].total;
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  const page = filteredCustomersSql(q, now);
  const started = performance.now();
  await client.query(page.sql, page.params);
  const pageMs = performance.now() - started;
  console.log(`${filter.slice(0, 64)}: total ${counted}, total median ${times[3].toFixed(1)} ms, first page ${pageMs.toFixed(1)} ms`);
}
await client.end();
