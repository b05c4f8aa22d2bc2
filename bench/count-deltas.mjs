// What sending a batch's filter-count deltas costs Node: six text arrays (pg's encoding) against one
// JSON parameter (bench/notes.md, "Kept counts for the transaction filters"). A batch in customer
// order: 5,000 rows over ~three years and a few (product, platform, sandbox) values.
//   npx nest build && node bench/count-deltas.mjs
import pgUtils from 'pg/lib/utils.js';
import { filterCountDeltas } from '../dist/projection/day-counts.js';

const products = [['apple:monthly', 'apple'], ['apple:yearly', 'apple'], ['google:monthly', 'google']];
const rows = Array.from({ length: 5000 }, (_, i) => {
  const [product_id, platform] = products[i % products.length];
  return { app_id: 'app-1', cell: { day: new Date(Date.UTC(2023, 0, 1) + (i % 1100) * 86_400_000).toISOString().slice(0, 10), product_id, platform, sandbox: i % 50 === 0 } };
});
const ms = (from) => (Number(process.hrtime.bigint() - from) / 1e6).toFixed(2);
for (let round = 1; round <= 5; round++) {
  let t = process.hrtime.bigint();
  const deltas = filterCountDeltas(rows);
  const summed = ms(t);
  t = process.hrtime.bigint();
  for (const column of ['app_id', 'product_id', 'platform', 'sandbox', 'day', 'n']) pgUtils.prepareValue(deltas.map((d) => d[column]));
  const arrays = ms(t);
  t = process.hrtime.bigint();
  JSON.stringify(deltas);
  console.log(`round ${round}: ${deltas.length} deltas summed in ${summed} ms; as six arrays ${arrays} ms, as JSON ${ms(t)} ms`);
}
