import { Inject } from '@nestjs/common';
import { CommandRunner, Option, SubCommand } from 'nest-commander';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { AppleApiClient } from '../import/apple/apple-api-client.js';
import {
  APPLE_NOTIFICATION_HISTORY_DAYS,
  appleNotificationEvents,
  notificationHistoryLines,
  notificationKey,
  windowDigest,
} from '../import/apple/apple-notification-import.js';
import { appleTransactionEvents, parseAppleImportLine } from '../import/apple/apple-transaction-import.js';
import { ImportJournal } from '../import/import-journal.js';
import { fileDigest, fileLines } from '../import/import-source.js';
import { appleVerifierFor, type AppleVerifier } from '../store-notifications/apple/apple-verifier.js';
import { unreadableInput } from './input-file.js';
import { refuseExtraArguments, UsageError } from './usage-error.js';
import { runCliImport } from './run-cli-import.js';
import { sourcedLine } from '../import/import-runner.js';
import { SOURCES } from '../events/provenance.js';

type CommonOptions = { app?: string; dryRun?: boolean };

/** The app's Apple settings, its API client and a verifier like the notification endpoint's, or a usage error naming the setting. */
function appleApp(config: AppConfig, appId: string | undefined, command: string): { client: AppleApiClient; verifier: AppleVerifier; appId: string } {
  if (!appId) throw new UsageError(`${command} needs --app <application id>`);
  if (!config.apple)
    throw new UsageError(`${command}: no App Store application is configured: set APPLE_APPS, APPLE_ROOT_CERTIFICATES and APPLE_API_KEYS (docs/import.md)`);
  const app = config.apple.apps.get(appId);
  if (!app)
    throw new UsageError(
      `${command}: application ${JSON.stringify(appId)} is not in APPLE_APPS (configured: ${[...config.apple.apps.keys()].join(', ') || 'none'})`,
    );
  const key = config.apple.apiKeys.get(appId);
  if (!key)
    throw new UsageError(
      `${command}: application ${appId} has no In-App Purchase key: add ${appId}:<issuerId>:<keyId>:<path to .p8> to APPLE_API_KEYS (docs/import.md)`,
    );
  return {
    appId,
    client: new AppleApiClient(appId, key, app, config.apple.apiBaseUrl),
    verifier: appleVerifierFor(config.apple.rootCertificates, app, () => Date.now()),
  };
}

@SubCommand({
  name: 'apple',
  description:
    "Import what the App Store knows about existing customers: one line per customer, transactionId[,applicationUsername] (any transaction id of the customer's). " +
    'Publishes the events the notification endpoint would. Resumable: run it again after an interruption. Exit 0: every line imported, unchanged or skipped with a reason; 1: some line failed or the run stopped; 2: usage or configuration.',
})
export class ImportAppleCommand extends CommandRunner {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    super();
  }

  async run(args: string[], options: CommonOptions & { file?: string } = {}): Promise<void> {
    refuseExtraArguments('import apple', args);
    const { client, verifier, appId } = appleApp(this.config, options.app, 'import apple');
    if (!options.file) throw new UsageError('import apple needs --file <csv of transactionId[,applicationUsername]>');
    const unreadable = unreadableInput(options.file, 'a CSV file of transactionId[,applicationUsername] lines', { regular: true });
    if (unreadable) throw new UsageError(`import apple: --file ${options.file} is not a readable file: ${unreadable}`);
    const { lines, fraction } = fileLines(options.file);
    await runCliImport(this.config, {
      dryRun: options.dryRun,
      appId,
      kind: 'apple-transactions',
      digest: await fileDigest(options.file),
      lines,
      fraction,
      parseLine: parseAppleImportLine,
      fetchEvents: async (line) => sourcedLine(await appleTransactionEvents(appId, client, verifier, line), SOURCES.appleImport),
    });
  }

  @Option({ flags: '--app <id>', description: 'the application (APPLE_APPS) the customers are of' })
  parseApp(value: string): string {
    return value;
  }

  @Option({ flags: '--file <csv>', description: 'transactionId[,applicationUsername] per line' })
  parseFile(value: string): string {
    return value;
  }

  @Option({ flags: '--dry-run', description: 'print the events to stdout instead of publishing them (nothing is recorded)' })
  parseDryRun(): boolean {
    return true;
  }
}

const DAY_MS = 86_400_000;

function parseDate(flag: string, value: string): number {
  const ms = /^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:\d{2}))?$/.test(value) ? Date.parse(value) : NaN;
  if (!Number.isFinite(ms))
    throw new UsageError(`${flag} must be a date (2026-01-31) or an instant with offset (2026-01-31T12:00:00Z); got ${JSON.stringify(value)}`);
  return ms;
}

@SubCommand({
  name: 'apple-notifications',
  description:
    `Recover App Store notifications the endpoint missed: Get Notification History (Apple keeps ${APPLE_NOTIFICATION_HISTORY_DAYS} days), each notification treated as if posted to the endpoint (same event ids: what was received is not counted twice). ` +
    'Exit codes as import apple.',
})
export class ImportAppleNotificationsCommand extends CommandRunner {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    super();
  }

  async run(args: string[], options: CommonOptions & { since?: string; until?: string; onlyFailures?: boolean } = {}): Promise<void> {
    refuseExtraArguments('import apple-notifications', args);
    const { client, verifier, appId } = appleApp(this.config, options.app, 'import apple-notifications');
    if (!options.since) throw new UsageError(`import apple-notifications needs --since <date> (within the last ${APPLE_NOTIFICATION_HISTORY_DAYS} days)`);
    const now = Date.now();
    const startDate = parseDate('--since', options.since);
    const endDate = options.until ? parseDate('--until', options.until) : now;
    if (startDate < now - APPLE_NOTIFICATION_HISTORY_DAYS * DAY_MS)
      throw new UsageError(`--since ${options.since} is more than ${APPLE_NOTIFICATION_HISTORY_DAYS} days ago: Apple keeps no notification history that old`);
    if (endDate <= startDate) throw new UsageError(`--until must be after --since`);
    const window = { startDate, endDate: Math.min(endDate, now), onlyFailures: options.onlyFailures === true };
    const abort = new AbortController();
    // The history resumes from the checkpoint the run's journal keeps (the journal exists once the database is open, before the first page is asked).
    let journal: ImportJournal | undefined;
    const { lines, fraction } = notificationHistoryLines(client, window, undefined, abort.signal, () => journal);
    await runCliImport(this.config, {
      journalReady: (j) => (journal = j),
      dryRun: options.dryRun,
      appId,
      kind: 'apple-notifications',
      // Without --until the window ends now; the next run's window differs, and its notifications already received are deduplicated by id.
      digest: windowDigest(options.until ? window : { ...window, endDate: 0 }),
      lines,
      fraction,
      parseLine: (text) => text,
      keyOf: notificationKey,
      fetchEvents: (signedPayload) => appleNotificationEvents(appId, verifier, signedPayload),
    });
  }

  @Option({ flags: '--app <id>', description: 'the application (APPLE_APPS)' })
  parseApp(value: string): string {
    return value;
  }

  @Option({ flags: '--since <date>', description: `start of the window (ISO 8601; at most ${APPLE_NOTIFICATION_HISTORY_DAYS} days ago)` })
  parseSince(value: string): string {
    return value;
  }

  @Option({ flags: '--until <date>', description: 'end of the window (default: now)' })
  parseUntil(value: string): string {
    return value;
  }

  @Option({ flags: '--only-failures', description: 'only the notifications Apple could not deliver' })
  parseOnlyFailures(): boolean {
    return true;
  }

  @Option({ flags: '--dry-run', description: 'print the events to stdout instead of publishing them (nothing is recorded)' })
  parseDryRun(): boolean {
    return true;
  }
}

export const APPLE_IMPORT_SUBCOMMANDS = [ImportAppleCommand, ImportAppleNotificationsCommand];
