import { Inject } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { CommandRunner, Option, SubCommand } from 'nest-commander';
import { APP_CONFIG, type AppConfig, type GoogleSettings } from '../config/app-config.js';
import { openDatabase } from '../database/open-database.js';
import type { androidpublisher_v3 } from '@googleapis/androidpublisher';
import { googleVoidedImportEvents, importGooglePurchase, parseGoogleLine, type GoogleImportLine, type StoredOrder } from '../import/google/google-import.js';
import { GOOGLE_VOIDED_KIND, listVoidedPurchases, storedOrder, VOIDED_RETENTION_MS, voidedItemKey } from '../import/google/google-voided.js';
import type { SourceLine } from '../import/import-runner.js';
import { fileDigest, fileLines } from '../import/import-source.js';
import { GooglePlayApi } from '../store-notifications/google/google-play.js';
import { unreadableInput } from './input-file.js';
import { refuseExtraArguments, UsageError } from './usage-error.js';
import { runCliImport } from './run-cli-import.js';
import { sourcedLine } from '../import/import-runner.js';
import { SOURCES } from '../events/provenance.js';

type CommonOptions = { app?: string; dryRun?: boolean };

/** The application's Google settings, or a usage error naming the setting that is missing. */
export function googleApp(config: AppConfig, appId: string | undefined, command: string): { settings: GoogleSettings; packageName: string; appId: string } {
  if (!appId) throw new UsageError(`${command} needs --app <application id>`);
  if (!config.google) {
    throw new UsageError(
      `${command}: no Google Play application is configured: set GOOGLE_APPS (appId:packageName), GOOGLE_SERVICE_ACCOUNT_FILE (the service account key) and GOOGLE_PUBSUB_AUDIENCE`,
    );
  }
  const app = config.google.apps.get(appId);
  if (!app)
    throw new UsageError(`${command}: application ${JSON.stringify(appId)} is not in GOOGLE_APPS (configured: ${[...config.google.apps.keys()].join(', ')})`);
  return { settings: config.google, packageName: app.packageName, appId };
}

@SubCommand({
  name: 'google',
  description:
    'Import Google Play purchases by purchase token: each line of --file is purchaseToken[,productId for a one-time product][,applicationUsername]. ' +
    'Asks subscriptionsv2.get (following linkedPurchaseToken back through upgrades) or products.get and publishes what the notification endpoint would. ' +
    'Tokens Google no longer knows (404/410) are skipped with the reason. Exit 0: every line imported, unchanged or skipped; 1: some line failed or the run stopped; 2: usage.',
})
export class ImportGoogleCommand extends CommandRunner {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    super();
  }

  async run(args: string[], options: CommonOptions & { file?: string } = {}): Promise<void> {
    refuseExtraArguments('import google', args);
    const { settings, packageName, appId } = googleApp(this.config, options.app, 'import google');
    if (!options.file) throw new UsageError('import google needs --file <csv of purchaseToken[,productId][,applicationUsername]>');
    const unreadable = unreadableInput(options.file, 'a CSV file of purchaseToken[,productId][,applicationUsername] lines', { regular: true });
    if (unreadable) throw new UsageError(`import google: --file ${options.file} is not a readable file: ${unreadable}`);
    const api = new GooglePlayApi(settings);
    const digest = await fileDigest(options.file);
    const source = fileLines(options.file);
    const database = options.dryRun ? undefined : await openDatabase(this.config, 'import');
    try {
      await runCliImport<GoogleImportLine>(this.config, {
        dryRun: options.dryRun,
        appId,
        kind: 'google-purchases',
        digest,
        db: database?.db,
        lines: source.lines,
        fraction: source.fraction,
        parseLine: (text) => parseGoogleLine(text),
        fetchEvents: async (line) => sourcedLine(await importGooglePurchase(api, appId, packageName, line), SOURCES.googleImport),
      });
    } finally {
      await database?.close();
    }
  }

  @Option({ flags: '--app <id>', description: 'the application (GOOGLE_APPS) the purchases belong to' })
  parseApp(value: string): string {
    return value;
  }

  @Option({ flags: '--file <csv>', description: 'purchaseToken[,productId][,applicationUsername] per line' })
  parseFile(value: string): string {
    return value;
  }

  @Option({ flags: '--dry-run', description: 'print the events on stdout instead of publishing them; nothing is recorded' })
  parseDryRun(): boolean {
    return true;
  }
}

/** --since: an ISO 8601 date or time, or epoch milliseconds, within Google's 30 days. */
export function parseSince(value: string | undefined, now = Date.now()): number {
  if (!value) throw new UsageError('import google-voided needs --since <date> (ISO 8601, within the last 30 days)');
  const ms = /^\d{10,16}$/.test(value) ? Number(value) : Date.parse(value);
  if (!Number.isFinite(ms)) throw new UsageError(`--since must be an ISO 8601 date or epoch milliseconds (got ${JSON.stringify(value)})`);
  if (ms > now) throw new UsageError(`--since ${value} is in the future`);
  if (ms < now - VOIDED_RETENTION_MS) throw new UsageError(`--since ${value} is more than 30 days ago: Google keeps voided purchases for 30 days`);
  return ms;
}

@SubCommand({
  name: 'google-voided',
  description:
    'Import Google Play refunds and chargebacks since --since (voidedpurchases.list, subscriptions included; Google keeps 30 days): each voided order the read models hold ' +
    'is revoked as a voided-purchase notification would, at its voidedTimeMillis. Exit 0: every voided purchase imported, unchanged or skipped; 1: some failed or the run stopped; 2: usage.',
})
export class ImportGoogleVoidedCommand extends CommandRunner {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    super();
  }

  async run(args: string[], options: CommonOptions & { since?: string } = {}): Promise<void> {
    refuseExtraArguments('import google-voided', args);
    const { settings, packageName, appId } = googleApp(this.config, options.app, 'import google-voided');
    const since = parseSince(options.since);
    const api = new GooglePlayApi(settings);
    // The database is read in a dry run too: a voided order is revoked from what the read models hold.
    const { db, close } = await openDatabase(this.config, 'import');
    try {
      // One journal per package whatever --since says: a void (order and time) is done once, in any listing.
      const digest = createHash('sha256').update(packageName).digest('hex');
      // orders this run revoked: a second void of one order adds to the first (googleVoidedImportEvents)
      const published = new Map<string, StoredOrder>();
      await runCliImport<androidpublisher_v3.Schema$VoidedPurchase>(this.config, {
        dryRun: options.dryRun,
        appId,
        kind: GOOGLE_VOIDED_KIND,
        digest,
        db,
        lines: numbered(listVoidedPurchases(api, packageName, since)),
        parseLine: (text) => JSON.parse(text) as androidpublisher_v3.Schema$VoidedPurchase,
        keyOf: (v) => voidedItemKey(v),
        fetchEvents: async (v) => sourcedLine(googleVoidedImportEvents(appId, v, await storedOrder(db, appId, v.orderId), published), SOURCES.googleImport),
      });
    } finally {
      await close();
    }
  }

  @Option({ flags: '--app <id>', description: 'the application (GOOGLE_APPS) the purchases belong to' })
  parseApp(value: string): string {
    return value;
  }

  @Option({ flags: '--since <date>', description: 'oldest void to list (ISO 8601 or epoch ms, within the last 30 days)' })
  parseSinceOption(value: string): string {
    return value;
  }

  @Option({ flags: '--dry-run', description: 'print the events on stdout instead of publishing them; nothing is recorded' })
  parseDryRun(): boolean {
    return true;
  }
}

async function* numbered(items: AsyncIterable<unknown>): AsyncGenerator<SourceLine> {
  let line = 0;
  for await (const item of items) {
    const text = JSON.stringify(item);
    yield { line: ++line, bytes: Buffer.byteLength(text), text };
  }
}

export const GOOGLE_IMPORT_SUBCOMMANDS = [ImportGoogleCommand, ImportGoogleVoidedCommand];
