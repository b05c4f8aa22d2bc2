import { Inject } from '@nestjs/common';
import { Command, CommandRunner, Option, SubCommand } from 'nest-commander';
import type { DataSource } from 'typeorm';
import { applicationIdProblem } from '../common/application-id.js';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { openDatabase } from '../database/open-database.js';
import { checkEntitlementDefinition, checkEntitlementName, EntitlementDefinitionError } from '../entitlements/entitlement-definition.js';
import { defineEntitlement, listEntitlements, removeEntitlement } from '../entitlements/entitlement-definitions.js';
import { refuseExtraArguments, UsageError } from './usage-error.js';

// Entitlement definitions from the command line (docs/entitlements.md): the same checks and the
// same messages as PUT/DELETE /v2/entitlements/{name}, through the same functions.

type Options = { app?: string; name?: string; products?: string };

/** The shared validation's refusal, as a usage error (exit 2) with the same message as the API's 400. */
const asUsage = (error: unknown) => (error instanceof EntitlementDefinitionError ? new UsageError(error.message) : error);

abstract class EntitlementsSubCommand extends CommandRunner {
  constructor(@Inject(APP_CONFIG) protected readonly config: AppConfig) {
    super();
  }

  async run(args: string[], options: Options = {}): Promise<void> {
    refuseExtraArguments(`entitlements ${this.command.name()}`, args);
    if (!options.app) throw new UsageError(`entitlements ${this.command.name()} needs --app <application id>`);
    this.checkUsage(options);
    const { db, close } = await openDatabase(this.config, 'entitlements');
    try {
      await this.runWith(db, options as Options & { app: string });
    } finally {
      await close();
    }
  }

  /** Refuses a wrong command line before the database is opened, so it exits 2 even without one. */
  protected checkUsage(_options: Options): void {}

  protected abstract runWith(db: DataSource, options: Options & { app: string }): Promise<void>;

  @Option({ flags: '--app <id>', description: 'the application the entitlement belongs to' })
  parseApp(value: string): string {
    const problem = applicationIdProblem(value);
    if (problem) throw new UsageError(`--app ${problem}`);
    return value;
  }
}

@SubCommand({ name: 'set', description: 'Define an entitlement, or replace the products that grant it' })
export class EntitlementsSetCommand extends EntitlementsSubCommand {
  protected override checkUsage(o: Options): void {
    if (o.name === undefined) throw new UsageError('entitlements set needs --name <entitlement>');
    if (o.products === undefined) throw new UsageError('entitlements set needs --products <platform:product,...>');
    try {
      checkEntitlementDefinition(o.name, productList(o.products));
    } catch (error) {
      throw asUsage(error);
    }
  }

  protected async runWith(db: DataSource, o: Options & { app: string }): Promise<void> {
    const definition = checkEntitlementDefinition(o.name, productList(o.products ?? ''));
    const { created } = await defineEntitlement(db, o.app, definition).catch((error: unknown) => {
      throw asUsage(error);
    });
    process.stdout.write(`entitlement ${definition.name} of ${o.app} ${created ? 'defined' : 'replaced'}: ${definition.productIds.join(', ')}\n`);
  }

  @Option({ flags: '--name <entitlement>', description: 'the entitlement (a letter or digit, then letters, digits, _ . -; at most 64)' })
  parseName(value: string): string {
    return value;
  }

  @Option({ flags: '--products <ids>', description: 'the products that grant it, comma-separated: apple:pro_monthly,google:pro_monthly' })
  parseProducts(value: string): string {
    return value;
  }
}

/** `--products a,b` as the list the API takes in productIds (an empty part is kept, and refused, as in a JSON list). */
const productList = (value: string): string[] => (value === '' ? [] : value.split(','));

@SubCommand({ name: 'list', description: "The application's entitlements and the products that grant each" })
export class EntitlementsListCommand extends EntitlementsSubCommand {
  protected async runWith(db: DataSource, o: Options & { app: string }): Promise<void> {
    const definitions = await listEntitlements(db, o.app);
    if (definitions.length === 0) process.stdout.write(`no entitlements defined for ${o.app}\n`);
    for (const d of definitions) process.stdout.write(`${d.name}\t${d.productIds.join(',')}\n`);
  }
}

@SubCommand({ name: 'remove', description: 'Remove an entitlement' })
export class EntitlementsRemoveCommand extends EntitlementsSubCommand {
  protected override checkUsage(o: Options): void {
    if (o.name === undefined) throw new UsageError('entitlements remove needs --name <entitlement>');
    try {
      checkEntitlementName(o.name);
    } catch (error) {
      throw asUsage(error);
    }
  }

  protected async runWith(db: DataSource, o: Options & { app: string }): Promise<void> {
    const name = checkEntitlementName(o.name);
    if (!(await removeEntitlement(db, o.app, name))) throw new Error(`the application ${o.app} defines no entitlement ${JSON.stringify(name)}`);
    process.stdout.write(`entitlement ${name} of ${o.app} removed\n`);
  }

  @Option({ flags: '--name <entitlement>', description: 'the entitlement to remove' })
  parseName(value: string): string {
    return value;
  }
}

export const ENTITLEMENT_SUBCOMMANDS = [EntitlementsSetCommand, EntitlementsListCommand, EntitlementsRemoveCommand];

@Command({
  name: 'entitlements',
  description: 'Define which products grant which entitlement (docs/entitlements.md)',
  subCommands: ENTITLEMENT_SUBCOMMANDS,
})
export class EntitlementsCommand extends CommandRunner {
  async run(): Promise<void> {
    throw new UsageError('entitlements needs a subcommand: set, list or remove');
  }
}
