// Reads a V8 .cpuprofile (node --cpu-prof) and prints where the self time went: by package (or
// node:internal / src / native), each package's inclusive share (a sample counts for every package on
// its stack), and the top functions, as shares of the non-idle samples taken once requests are served
// (start-up, module loading and migrations left out).
// Usage: node bench/profile-summary.mjs <file.cpuprofile> [top=30]
import { readFileSync } from 'node:fs';

const [file, top = '30'] = process.argv.slice(2);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const counts = new Map();
for (const id of profile.samples) counts.set(id, (counts.get(id) ?? 0) + 1);
const where = (url) => {
  if (!url) return '(native/vm)';
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1];
  if (url.startsWith('node:')) return 'node:' + url.slice(5).split('/')[0];
  if (url.includes('/dist/')) return 'dist/' + url.split('/dist/')[1].split('/')[0];
  return url;
};
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const stackOf = (id) => {
  const frames = [];
  for (let at = id; at !== undefined; at = parent.get(at)) frames.push(byId.get(at).callFrame);
  return frames;
};
// the first sample inside an HTTP request marks the end of start-up
const firstServed = profile.samples.findIndex((id) => stackOf(id).some((f) => f.functionName === 'parserOnIncoming'));
const packages = new Map();
const inclusive = new Map();
const functions = new Map();
let busy = 0;
let idle = 0;
for (const id of profile.samples.slice(Math.max(0, firstServed))) {
  const { functionName, url, lineNumber } = byId.get(id).callFrame;
  if (functionName === '(idle)') {
    idle++;
    continue;
  }
  busy++;
  const pkg = functionName.startsWith('(') ? functionName : where(url);
  packages.set(pkg, (packages.get(pkg) ?? 0) + 1);
  for (const p of new Set(stackOf(id).filter((f) => f.url).map((f) => where(f.url)))) inclusive.set(p, (inclusive.get(p) ?? 0) + 1);
  const key = `${functionName || '(anonymous)'} ${url ? url.replace(/^.*node_modules\//, '').replace(/^.*\/dist\//, 'dist/') + ':' + (lineNumber + 1) : ''}`;
  functions.set(key, (functions.get(key) ?? 0) + 1);
}
const pct = (n) => `${((n / busy) * 100).toFixed(1)}%`;
console.log(`non-idle samples once serving: ${busy} (idle ${idle})`);
console.log('\nself time by package:');
for (const [k, n] of [...packages].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`  ${pct(n).padStart(6)}  ${k}`);
console.log('\ninclusive time by package (on the stack):');
for (const [k, n] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, 40)) console.log(`  ${pct(n).padStart(6)}  ${k}`);
console.log('\ntop functions (self):');
for (const [k, n] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, Number(top))) console.log(`  ${pct(n).padStart(6)}  ${k}`);
