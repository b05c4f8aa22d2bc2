#!/usr/bin/env node
// npm run test:model [-- --runs N] [-- --seed S]: the reference-model property test alone, with
// more generated histories than `npm test` runs (12). Builds first: the CLI's rebuild --verify runs.
import { spawnSync } from 'node:child_process';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '200' }, seed: { type: 'string' } }, strict: true });
if (!/^\d+$/.test(values.runs)) {
  console.error(`--runs must be a whole number (got ${values.runs})`);
  process.exit(2);
}
const env = { ...process.env, MODEL_RUNS: values.runs, ...(values.seed ? { MODEL_SEED: values.seed } : {}) };
const run = (cmd, args) => spawnSync(cmd, args, { stdio: 'inherit', env }).status ?? 1;
const built = run('npx', ['nest', 'build']);
if (built !== 0) process.exit(built);
process.exit(run(process.execPath, ['--experimental-vm-modules', '--no-warnings=ExperimentalWarning', 'node_modules/jest/bin/jest.js', 'test/model']));
