import type { DataSource } from 'typeorm';
import { createProgress } from '../common/progress.js';
import type { AppConfig } from '../config/app-config.js';
import { openDatabase, type OpenDatabase } from '../database/open-database.js';
import { ImportJournal } from '../import/import-journal.js';
import { formatSummary, importExitCode, runImport, type ImportOptions, type ImportSummary } from '../import/import-runner.js';
import { openEventSink, storeEventSink, type EventSink } from './event-sink.js';

export type CliImport<T> = {
  dryRun?: boolean;
  appId: string;
  kind: string;
  digest: string;
  /** The database when the command already opened it (it reads the read models); opened here otherwise, unless a dry run. */
  db?: DataSource;
  journalReady?: (journal: ImportJournal) => void;
} & Pick<ImportOptions<T>, 'lines' | 'fraction' | 'parseLine' | 'keyOf' | 'fetchEvents'>;

/**
 * One import with what every store's import shares: the sink `publish` uses, the resume journal,
 * SIGINT (stop starting lines, finish and record those in flight; a second one quits at once),
 * progress on stderr, the summary and the exit code (docs/import.md).
 */
export async function runCliImport<T>(config: AppConfig, o: CliImport<T>): Promise<ImportSummary> {
  let sink: EventSink | undefined;
  let opened: OpenDatabase | undefined;
  const abort = new AbortController();
  const onSigint = () => {
    if (abort.signal.aborted) process.exit(130);
    process.stderr.write('\ninterrupted: finishing the lines in flight (Ctrl-C again to quit at once)\n');
    abort.abort();
  };
  process.on('SIGINT', onSigint);
  try {
    let db = o.db;
    if (!o.dryRun) {
      if (!db) db = (opened = await openDatabase(config, 'import')).db;
      sink = storeEventSink(db, await openEventSink(config), { seal: config.cryptoShredding });
    }
    const journal = !o.dryRun && db ? new ImportJournal(db, o.appId, o.kind, o.digest) : undefined;
    if (journal) o.journalReady?.(journal);
    let summary: ImportSummary;
    try {
      summary = await runImport<T>({
        ...o,
        concurrency: config.importConcurrency,
        sink,
        journal,
        out: (text) => process.stdout.write(text),
        log: (text) => process.stderr.write(text),
        progress: createProgress({ label: o.kind, unit: 'lines' }),
        signal: abort.signal,
        maxFutureSkewMs: config.eventTimeMaxSkewMs,
      });
    } catch (error) {
      // The source itself failed (a store listing could not be read after its retries).
      throw new Error(`${o.kind} stopped: ${(error as Error).message}; what was done is recorded: run the same command again to continue`, { cause: error });
    }
    process.stderr.write(formatSummary(summary, { dryRun: o.dryRun }));
    process.exitCode = importExitCode(summary);
    return summary;
  } finally {
    process.off('SIGINT', onSigint);
    await sink?.close();
    await opened?.close();
  }
}
