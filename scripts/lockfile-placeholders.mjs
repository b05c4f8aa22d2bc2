#!/usr/bin/env node
// Workaround for npm/cli#9846 (open): when the registry cannot serve an optional platform package
// (the mirror on our build machines serves Linux binaries only), `npm install` leaves it out of
// package-lock.json and `npm ci` then rejects that same lockfile ("Missing: @swc/core-darwin-arm64@").
// npm 11.13 wrote an inert placeholder entry for such packages; this restores those placeholders.
// Run after any `npm install` that rewrites the lockfile:  node scripts/lockfile-placeholders.mjs
import { readFileSync, writeFileSync } from 'node:fs';

const file = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(file, 'utf8'));
let added = 0;
// Drop placeholders from an earlier run; they are recomputed below.
for (const [path, entry] of Object.entries(lock.packages)) {
  if (path && !entry.version && entry.optional && Object.keys(entry).every((k) => k === 'optional' || k === 'dev')) delete lock.packages[path];
}
for (const [path, entry] of Object.entries(lock.packages)) {
  for (const name of Object.keys(entry.optionalDependencies ?? {})) {
    const nested = `${path ? path + '/' : ''}node_modules/${name}`;
    const hoisted = `node_modules/${name}`;
    if (lock.packages[nested] || lock.packages[hoisted]) continue;
    // npm places an unavailable optional package, inert, beneath the package that wants it.
    lock.packages[nested] = { ...(entry.dev ? { dev: true } : {}), optional: true };
    added++;
  }
}
writeFileSync(file, JSON.stringify(lock, null, 2) + '\n');
console.log(`package-lock.json: ${added} placeholder(s) for unavailable optional packages`);
