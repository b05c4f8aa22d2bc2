import { refuseExtraArguments, UsageError } from './usage-error.js';
import { Inject } from '@nestjs/common';
import { Command, CommandRunner, Option } from 'nest-commander';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { openDatabase } from '../database/open-database.js';
import { createProgressReporter } from '../operations/rebuild/progress.js';
import { RebuildError, Rebuilder } from '../operations/rebuild/rebuilder.js';

type RebuildOptions = { verify?: boolean; abort?: boolean; allowPartialHistory?: boolean };

/** Exit status of `rebuild --verify` when the live read models differ from a fresh projection. */
export const EXIT_DRIFT = 3;

@Command({
  name: 'rebuild',
  description:
    'Rebuild the read models from the start of the log into a new generation while the API serves the current one, then switch atomically. Resumes an interrupted rebuild.',
})
export class RebuildCommand extends CommandRunner {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    super();
  }

  async run(args: string[], options: RebuildOptions): Promise<void> {
    refuseExtraArguments('rebuild', args);
    if (options.verify && options.abort) throw new UsageError('--verify and --abort cannot be combined');
    const { db, server, close } = await openDatabase(this.config, 'rebuild');
    try {
      const rebuilder = new Rebuilder(this.config, db, server, createProgressReporter());
      if (options.abort) {
        process.stdout.write((await rebuilder.abort()) + '\n');
        return;
      }
      const result = await rebuilder.run(options.verify ? 'verify' : 'rebuild', { allowPartialHistory: options.allowPartialHistory });
      if (result.kind === 'rebuild') {
        process.stdout.write(
          `rebuild #${result.id}${result.resumed ? ' (resumed)' : ''}: switched to generation ${result.generation} at ${result.events} events in ${result.seconds.toFixed(1)} s\n`,
        );
        return;
      }
      if (result.differences.length === 0) {
        process.stdout.write(`verify #${result.id}: the live read models equal a fresh projection of the log (${result.seconds.toFixed(1)} s)\n`);
        return;
      }
      process.stdout.write(`verify #${result.id}: the live read models differ from a fresh projection of the log\n`);
      for (const d of result.differences) {
        process.stdout.write(`  ${d.table}: live ${d.liveCount} rows, fresh projection ${d.rebuiltCount} rows\n`);
        for (const row of d.onlyLive) process.stdout.write(`    only in live:  ${JSON.stringify(row)}\n`);
        for (const row of d.onlyRebuilt) process.stdout.write(`    only in fresh: ${JSON.stringify(row)}\n`);
      }
      process.exitCode = EXIT_DRIFT;
    } catch (error) {
      if (error instanceof RebuildError) {
        process.stderr.write(`rebuild: ${error.message}\n`);
        process.exitCode = 1;
        return;
      }
      throw error;
    } finally {
      await close();
    }
  }

  @Option({
    flags: '--verify',
    description: 'project into a scratch generation and report differences from the live read models, without switching (exit 3 on drift)',
  })
  parseVerify(): boolean {
    return true;
  }

  @Option({
    flags: '--allow-partial-history',
    description: 'rebuild even though retention removed the start of the log: the new generation holds only the retained events',
  })
  parseAllowPartialHistory(): boolean {
    return true;
  }

  @Option({ flags: '--abort', description: 'abandon an interrupted rebuild, dropping its generation; the live read models are untouched' })
  parseAbort(): boolean {
    return true;
  }
}
