// Native ESM jest (Nest 12 is ESM-only): @swc/jest strips types and keeps `import`s; relative
// `.js` specifiers are mapped back to the `.ts` sources.
const swc = [
  '@swc/jest',
  {
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2022',
      keepClassNames: true,
    },
    module: { type: 'es6' },
    sourceMaps: 'inline',
  },
];

/** @type {import('jest').Config} */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': swc },
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  // Tiers in the name: *.spec.ts pure, *.int-spec.ts real PostgreSQL/Kafka, *.e2e-spec.ts over HTTP.
  testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/test/**/*.int-spec.ts', '<rootDir>/test/**/*.e2e-spec.ts', '<rootDir>/test/**/*.spec.ts'],
  globalSetup: '<rootDir>/test/setup/global-setup.mjs',
  globalTeardown: '<rootDir>/test/setup/global-teardown.mjs',
  testTimeout: 60_000,
  maxWorkers: 2,
  // Under native ESM every test file's module graph (Nest, TypeORM, kafkajs, ...) stays in the worker's
  // heap: ~40 MB retained and ~60 MB allocated per e2e file. After ~50 files a worker held several GB,
  // and tearing that down took the process longer than jest-worker's 500 ms grace period after the END
  // message, so jest printed "A worker process has failed to exit gracefully" although no handle was open
  // (the workers' 'exit' came 1-4 ms after END, with only their stdio/IPC pipes active). A worker whose heap
  // exceeds this after a test file is replaced by a fresh one, so the last worker exits within the grace period.
  workerIdleMemoryLimit: '512MB',
};
