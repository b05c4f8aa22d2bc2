import { readFile } from 'node:fs/promises';
import { Inject } from '@nestjs/common';
import { Command, CommandRunner, SubCommand } from 'nest-commander';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { openDatabase } from '../database/open-database.js';
import { formatProblem, parseEcbRates } from '../fx/ecb-rates.js';
import { loadRates } from '../fx/load-rates.js';
import { MAX_RATES_FILE_BYTES, RatesFileError, ratesFileText } from '../fx/rates-file.js';
import { unreadableInput } from './input-file.js';
import { refuseExtraArguments, UsageError } from './usage-error.js';

@SubCommand({
  name: 'import',
  arguments: '<file>',
  description:
    "Load the European Central Bank's reference rates (eurofxref-hist.csv or eurofxref.csv, or the .zip holding either) into public.fx_rates, all or nothing (docs/exchange-rates.md). Exit 0: loaded; 1: the file has bad lines (each named by line number on stderr) and nothing was loaded; 2: usage error",
})
export class FxImportCommand extends CommandRunner {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    super();
  }

  async run(args: string[]): Promise<void> {
    refuseExtraArguments('fx import', args, 1);
    const [file] = args;
    const unreadable = unreadableInput(file, 'an ECB rates file: eurofxref-hist.csv, eurofxref.csv or their .zip');
    if (unreadable) throw new UsageError(`fx import: ${file}: ${unreadable}`);
    const bytes = await readFile(file);
    if (bytes.length > MAX_RATES_FILE_BYTES) throw new Error(`fx import: ${file} is over ${MAX_RATES_FILE_BYTES} bytes: no ECB rates file is that large`);
    let parsed;
    try {
      parsed = parseEcbRates(ratesFileText(bytes));
    } catch (error) {
      if (error instanceof RatesFileError) throw new Error(`fx import: ${file}: ${error.message}; nothing was loaded`);
      throw error;
    }
    if (!parsed.ok) {
      for (const problem of parsed.problems) process.stderr.write(`${formatProblem(problem)}\n`);
      if (parsed.more > 0) process.stderr.write(`... and ${parsed.more} more bad line(s)\n`);
      const bad = parsed.problems.length + parsed.more;
      throw new Error(`fx import: ${file}: ${bad} bad line(s); nothing was loaded`);
    }
    const { db, close } = await openDatabase(this.config, 'fx-import');
    try {
      const counts = await loadRates(db, parsed.rows);
      process.stdout.write(
        `${file}: ${parsed.days} day(s) from ${parsed.firstDay} to ${parsed.lastDay}, ${parsed.currencies.length} currencies (${parsed.currencies.join(' ')}): ` +
          `${parsed.rows.length} rates, ${counts.inserted} inserted, ${counts.changed} changed, ${counts.unchanged} unchanged\n`,
      );
    } finally {
      await close();
    }
  }
}

@Command({ name: 'fx', description: "Exchange rates: import the ECB's reference rates (docs/exchange-rates.md)", subCommands: [FxImportCommand] })
export class FxCommand extends CommandRunner {
  async run(): Promise<void> {
    throw new UsageError('fx needs a subcommand: import');
  }
}
