import { Inject } from '@nestjs/common';
import { Command, CommandRunner, Option } from 'nest-commander';
import { createProgress } from '../common/progress.js';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { openDatabase } from '../database/open-database.js';
import { importExitCode } from '../import/import-runner.js';
import { formatReconcileSummary, reconcilePass, type ReconcileMode } from '../reconcile/reconcile-pass.js';
import { reconcilableApps, reconcileStores } from '../reconcile/reconcile-stores.js';
import { openEventSink, storeEventSink, type EventSink } from './event-sink.js';
import { refuseExtraArguments, UsageError } from './usage-error.js';
import { withReconcileLock } from '../reconcile/reconcile-lock.js';

type Options = { app?: string; all?: boolean; suspect?: boolean; dryRun?: boolean };

@Command({
  name: 'reconcile',
  description:
    'Ask the stores about the subscriptions whose state may be wrong (a renewal overdue, billing retry or grace past its end, a pending purchase left pending, a rotating sample; --all: every one) ' +
    'and publish what differs from the read models (docs/operations.md, "Reconciliation"). Resumable: run it again after an interruption. ' +
    'Exit 0: every subscription checked or skipped with a reason; 1: some failed or the pass stopped; 2: usage or configuration.',
})
export class ReconcileCommand extends CommandRunner {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    super();
  }

  async run(args: string[], options: Options = {}): Promise<void> {
    refuseExtraArguments('reconcile', args);
    const appId = options.app;
    if (!appId) throw new UsageError('reconcile needs --app <application id>');
    if (options.all && options.suspect) throw new UsageError('reconcile takes --all or --suspect, not both');
    const mode: ReconcileMode = options.all ? 'all' : 'suspect';
    const stores = reconcileStores(this.config, appId);
    if (!stores.apple && !stores.google)
      throw new UsageError(
        `reconcile: application ${JSON.stringify(appId)} has no store API credentials (APPLE_APPS with APPLE_API_KEYS, or GOOGLE_APPS); configured: ${reconcilableApps(this.config).join(', ') || 'none'}`,
      );
    const abort = new AbortController();
    const onSigint = () => {
      if (abort.signal.aborted) process.exit(130);
      process.stderr.write('\ninterrupted: finishing the subscriptions in flight (Ctrl-C again to quit at once)\n');
      abort.abort();
    };
    process.on('SIGINT', onSigint);
    // The read models are read in a dry run too: the comparison is with them.
    const { db, close } = await openDatabase(this.config, 'reconcile');
    let sink: EventSink | undefined;
    try {
      if (!options.dryRun) sink = storeEventSink(db, await openEventSink(this.config), { seal: this.config.cryptoShredding });
      const pass = () =>
        reconcilePass({
          appId,
          mode,
          db,
          stores,
          policy: this.config.reconcile,
          concurrency: this.config.importConcurrency,
          maxFutureSkewMs: this.config.eventTimeMaxSkewMs,
          sink,
          dryRun: options.dryRun,
          out: (text) => process.stdout.write(text),
          log: (text) => process.stderr.write(text),
          progress: createProgress({ label: 'reconcile', unit: 'subscriptions' }),
          signal: abort.signal,
        });
      // A dry run neither publishes nor journals: it may run beside a pass.
      const summary = options.dryRun ? await pass() : await withReconcileLock(db, pass);
      if (!summary) {
        process.stderr.write('reconcile: another pass is running (the RECONCILE_INTERVAL schedule, or another `reconcile`): run again when it ends\n');
        process.exitCode = 1;
        return;
      }
      process.stderr.write(formatReconcileSummary(appId, mode, summary, options.dryRun));
      process.exitCode = importExitCode(summary);
    } finally {
      process.off('SIGINT', onSigint);
      await sink?.close();
      await close();
    }
  }

  @Option({ flags: '--app <id>', description: 'the application (APPLE_APPS with APPLE_API_KEYS, or GOOGLE_APPS)' })
  parseApp(value: string): string {
    return value;
  }

  @Option({ flags: '--suspect', description: 'only the subscriptions whose state is uncertain, and the rotating sample (the default)' })
  parseSuspect(): boolean {
    return true;
  }

  @Option({ flags: '--all', description: 'every subscription of the application' })
  parseAll(): boolean {
    return true;
  }

  @Option({
    flags: '--dry-run',
    description: 'print what differs (per subscription: the drift kind and the fields) instead of publishing; nothing is recorded',
  })
  parseDryRun(): boolean {
    return true;
  }
}
