import { decodeEvent } from '../events/decode-event.js';
import { fromSource } from '../events/provenance.js';
import type { Progress } from '../common/progress.js';
import type { EventSink } from '../cli/event-sink.js';
import type { ImportJournal } from './import-journal.js';
import { ImportFatalError, LineError } from './import-errors.js';
import { withStoreRetries, type RetryPolicy, RetryGate } from './store-retry.js';

export { ImportFatalError, LineError, StoreRetryableError } from './import-errors.js';

// The store-agnostic half of `import apple` / `import google` (docs/import.md): input lines in,
// the events of the notification endpoints' own mappings out, through the sink `publish` uses.
// A store plugs in with parseLine (the line's text to a request) and fetchEvents (the request to the
// events the store's current state stands for, or a reason to skip the line).

/** An event of the contract, as the notification mappings build them. */
export type ImportEvent = Record<string, unknown> & { id: string; data: Record<string, unknown> & { receiptId: string } };

/** What a line stands for: events to publish, or why there is nothing to publish (not a failure). */
export type LineResult = { events: ImportEvent[] } | { skip: string };
export const skip = (reason: string): LineResult => ({ skip: reason });
/** A line's events as published by the path `source` names (src/events/provenance.ts). */
export const sourcedLine = (result: LineResult, source: string): LineResult => ('skip' in result ? result : { events: fromSource(result.events, source) });

/** One line of the source: its number from 1, its bytes, and its text unless it is over the bound. */
export type SourceLine = { line: number; bytes: number; text?: string };

/**
 * A place in the source where every line before it must be done (published and recorded, or
 * skipped) before the source is read on: a paged source saves its position there (the end of a
 * page of Apple's notification history), so what a SIGKILL interrupts is only the page after it.
 */
export type SourceBarrier = { barrier: true };
export const BARRIER: SourceBarrier = Object.freeze({ barrier: true });

export type ImportOptions<T> = {
  /** Application the events are for (the events' appid). */
  appId: string;
  /** What is imported, as the journal files it: 'apple-transactions', 'google-purchases', 'apple-notifications'. */
  kind: string;
  lines: AsyncIterable<SourceLine | SourceBarrier>;
  /** Share of the source read (0..1), for the progress bar and ETA. */
  fraction?: () => number | undefined;
  /** Text of a line to what fetchEvents takes; throws LineError naming what is wrong. Blank lines never reach it. */
  parseLine: (text: string, line: number) => T;
  /** The journal key of a line: by default its number (a file with the same digest has the same lines). */
  keyOf?: (value: T, line: number) => string;
  /** Asks the store; throws StoreRetryableError (retried), LineError (the line fails), ImportFatalError (the run stops). */
  fetchEvents: (value: T, line: number) => Promise<LineResult>;
  /** Requests to the store in flight at once (IMPORT_CONCURRENCY). */
  concurrency: number;
  /** Where events go; unset with dryRun. */
  sink?: EventSink;
  /** Lines done by earlier runs of the same source (skipped as unchanged) and this run's; unset with dryRun. */
  journal?: ImportJournal;
  /** Print the events to `out` instead of publishing them; the journal is neither read nor written. */
  dryRun?: boolean;
  out?: (text: string) => void;
  /** Where line messages and the summary go (stderr). */
  log: (text: string) => void;
  progress?: Progress;
  retry?: Partial<RetryPolicy>;
  /** Aborted (SIGINT): no new line is started; lines in flight finish and are recorded. */
  signal?: AbortSignal;
  /** EVENT_TIME_MAX_SKEW_MS, for checking events against the contract before sending. */
  maxFutureSkewMs: number;
};

export type ImportSummary = {
  imported: number;
  /** Done by an earlier run of the same source (journal). */
  unchanged: number;
  skipped: { line: number; reason: string }[];
  failed: { line: number; reason: string }[];
  events: number;
  /** Stopped early (SIGINT, or fatal) before every line was tried. */
  interrupted: boolean;
  fatal?: string;
};

/** Exit status of an import (docs/import.md): 0 every line imported, unchanged or skipped with a reason; 1 otherwise; 2 usage (thrown before a run). */
export function importExitCode(s: ImportSummary): number {
  return s.failed.length > 0 || s.interrupted || s.fatal ? 1 : 0;
}

export function formatSummary(s: ImportSummary, o: { dryRun?: boolean } = {}): string {
  const lines = [
    `${o.dryRun ? 'dry run: would import' : 'imported'} ${s.imported} line(s) (${s.events} event(s)), unchanged ${s.unchanged} (done by an earlier run), skipped ${s.skipped.length}, failed ${s.failed.length}`,
  ];
  if (s.fatal) lines.push(`stopped: ${s.fatal}`);
  else if (s.interrupted) lines.push('interrupted: run the same command again to continue where it stopped');
  return lines.join('\n') + '\n';
}

/** Events buffered before one send (and one journal write). */
const FLUSH_EVENTS = 500;
const FLUSH_MS = 250;
/** Lines looked up in the journal at once. */
const LOOKUP_LINES = 256;

type Done = { line: number; key: string; outcome: 'imported' | 'skipped'; detail?: string; events: ImportEvent[] };

export async function runImport<T>(o: ImportOptions<T>): Promise<ImportSummary> {
  const summary: ImportSummary = { imported: 0, unchanged: 0, skipped: [], failed: [], events: 0, interrupted: false };
  if (!o.dryRun && (!o.sink || !o.journal)) throw new Error('runImport needs a sink and a journal unless dryRun');
  const gate = new RetryGate();
  const fail = (line: number, reason: string) => {
    summary.failed.push({ line, reason });
    o.progress?.clear();
    o.log(`line ${line}: failed: ${reason}\n`);
  };
  const skipLine = (line: number, reason: string) => {
    summary.skipped.push({ line, reason });
    o.progress?.clear();
    o.log(`line ${line}: skipped: ${reason}\n`);
  };

  // Lines fetched and not yet published: sent together, then recorded as done. A crash in between
  // republishes them on the next run under the same event ids, which the projection applies once.
  let outbox: Done[] = [];
  let outboxEvents = 0;
  let flushing: Promise<void> = Promise.resolve();
  const flush = () => {
    const batch = outbox;
    outbox = [];
    outboxEvents = 0;
    flushing = flushing.then(async () => {
      if (batch.length === 0 || summary.fatal) return;
      const events = batch.flatMap((d) => d.events);
      if (o.dryRun) {
        for (const e of events) o.out?.(JSON.stringify(e) + '\n');
      } else {
        try {
          if (events.length > 0) await sendInChunks(o.sink!, events);
        } catch (error) {
          summary.fatal = `the event log could not take events (${(error as Error).message}); lines ${batch
            .map((d) => d.line)
            .join(', ')
            .slice(0, 200)} were not published`;
          return;
        }
        await o.journal!.record(batch.map((d) => ({ key: d.key, line: d.line, outcome: d.outcome, detail: d.detail })));
      }
      for (const d of batch) {
        if (d.outcome === 'imported') {
          summary.imported++;
          summary.events += d.events.length;
        }
      }
    });
    return flushing;
  };
  const timer = setInterval(() => void flush(), FLUSH_MS);

  const inFlight = new Set<Promise<void>>();
  const work = async (item: { line: number; key: string; value: T }) => {
    try {
      const result = await withStoreRetries(() => o.fetchEvents(item.value, item.line), gate, o.retry, o.signal);
      if ('skip' in result) {
        skipLine(item.line, result.skip);
        outbox.push({ line: item.line, key: item.key, outcome: 'skipped', detail: result.skip, events: [] });
        return;
      }
      for (const event of result.events) {
        const decoded = decodeEvent(JSON.stringify(event), { maxFutureSkewMs: o.maxFutureSkewMs });
        if (!decoded.ok) throw new LineError(`maps to an event the contract refuses (${decoded.code}): ${decoded.reason}`);
      }
      outbox.push({ line: item.line, key: item.key, outcome: 'imported', events: result.events });
      outboxEvents += result.events.length;
      if (outboxEvents >= FLUSH_EVENTS) await flush();
    } catch (error) {
      if (error instanceof ImportFatalError) {
        summary.fatal ??= error.message;
        return;
      }
      fail(item.line, (error as Error).message);
    }
  };
  const showProgress = () =>
    o.progress?.update({
      done: summary.imported + summary.unchanged + summary.skipped.length + summary.failed.length,
      fraction: o.fraction?.(),
      detail: `${summary.failed.length} failed`,
    });
  const start = async (item: { line: number; key: string; value: T }) => {
    while (inFlight.size >= o.concurrency) await Promise.race(inFlight);
    const p = work(item).finally(() => {
      inFlight.delete(p);
      showProgress();
    });
    inFlight.add(p);
  };

  const stopped = () => o.signal?.aborted === true || summary.fatal !== undefined;
  let chunk: { line: number; key: string; value: T }[] = [];
  const runChunk = async () => {
    const items = chunk;
    chunk = [];
    const done = o.dryRun || !o.journal ? new Set<string>() : await o.journal.done(items.map((i) => i.key));
    for (const item of items) {
      if (stopped()) break;
      if (done.has(item.key)) {
        summary.unchanged++;
        continue;
      }
      await start(item);
      showProgress();
    }
  };
  try {
    for await (const source of o.lines) {
      if (stopped()) break;
      if ('barrier' in source) {
        // Everything read so far started, finished, published and recorded before the source goes on.
        await runChunk();
        await Promise.all(inFlight);
        await flush();
        continue;
      }
      if (source.text === undefined) {
        fail(source.line, `${source.bytes} bytes: longer than a line of this import may be`);
        continue;
      }
      if (source.text.trim() === '') continue;
      let value: T;
      try {
        value = o.parseLine(source.text, source.line);
      } catch (error) {
        if (!(error instanceof LineError)) throw error;
        fail(source.line, error.message);
        continue;
      }
      chunk.push({ line: source.line, key: o.keyOf?.(value, source.line) ?? String(source.line), value });
      if (chunk.length >= LOOKUP_LINES) await runChunk();
    }
    if (!stopped()) await runChunk();
    await Promise.all(inFlight);
    await flush();
  } finally {
    clearInterval(timer);
    await Promise.allSettled(inFlight);
    await flush().catch(() => undefined);
    o.progress?.stop();
  }
  summary.interrupted = o.signal?.aborted === true;
  return summary;
}

async function sendInChunks(sink: EventSink, events: ImportEvent[]): Promise<void> {
  let batch: { key: string; value: Buffer }[] = [];
  let bytes = 0;
  for (const event of events) {
    const value = Buffer.from(JSON.stringify(event));
    if (batch.length > 0 && bytes + value.length > sink.chunkBytes) {
      await sink.send(batch);
      batch = [];
      bytes = 0;
    }
    batch.push({ key: event.data.receiptId, value });
    bytes += value.length;
  }
  if (batch.length > 0) await sink.send(batch);
}
