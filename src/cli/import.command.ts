import { Command, CommandRunner } from 'nest-commander';
import { APPLE_IMPORT_SUBCOMMANDS } from './import-apple.command.js';
import { GOOGLE_IMPORT_SUBCOMMANDS } from './import-google.command.js';
import { ImportStripeCommand } from './import-stripe.command.js';

/** `import <store>`: bring the stores' existing customers into the log (docs/import.md). */
@Command({
  name: 'import',
  description: "Import existing customers from the stores' APIs into the event log (docs/import.md)",
  subCommands: [...APPLE_IMPORT_SUBCOMMANDS, ...GOOGLE_IMPORT_SUBCOMMANDS, ImportStripeCommand],
})
export class ImportCommand extends CommandRunner {
  async run(): Promise<void> {
    this.command.help();
  }
}

export const IMPORT_COMMANDS = [ImportCommand, ...APPLE_IMPORT_SUBCOMMANDS, ...GOOGLE_IMPORT_SUBCOMMANDS, ImportStripeCommand];
