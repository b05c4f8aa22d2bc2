#!/usr/bin/env node
// `npm start` and `npm run cli` run the build; this rebuilds first only when a source file is newer
// than the build (a full `nest build` takes ~15 s, which every `npm run -s cli -- token` used to pay).
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// An incremental build leaves unchanged outputs untouched, so their times say nothing: a stamp does.
const stamp = path.join(root, 'dist', '.cli-build-stamp');

function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(full) : statSync(full).mtimeMs);
  }
  return latest;
}

const sources = Math.max(
  newest(path.join(root, 'src')),
  ...['package.json', 'tsconfig.json', 'tsconfig.build.json', 'nest-cli.json'].map((f) => statSync(path.join(root, f)).mtimeMs),
);
if (!existsSync(stamp) || !existsSync(path.join(root, 'dist', 'cli.js')) || statSync(stamp).mtimeMs < sources) {
  const started = Date.now();
  const why = existsSync(stamp) ? 'a source is newer than the last build' : 'no build yet';
  process.stderr.write(`building dist/ (${why}; about 15 s)\n`);
  execFileSync(process.platform === 'win32' ? 'npx.cmd' : 'npx', ['nest', 'build'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  // dated when the build began: a source saved during the build makes the next run build again
  writeFileSync(stamp, `${new Date(started).toISOString()}\n`);
  utimesSync(stamp, new Date(started), new Date(started));
}
