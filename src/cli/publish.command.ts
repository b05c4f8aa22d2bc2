import { createProgress } from '../common/progress.js';
import { refuseExtraArguments } from './usage-error.js';
import { createReadStream, statSync } from 'node:fs';
import v8 from 'node:v8';
import vm from 'node:vm';
import { Inject } from '@nestjs/common';
import { Command, CommandRunner } from 'nest-commander';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { decodeEvent } from '../events/decode-event.js';
import { openEventSink } from './event-sink.js';
import { unreadableInput } from './input-file.js';
import { readLines } from './read-lines.js';

const CHUNK = 1000;

/** Room a message needs besides key and value: Kafka's record batch and record framing. */
const FRAMING_BYTES = 1024;

/** Kafka refused the records themselves (not the connection): worth finding the line by line. */
function isRecordError(error: unknown): boolean {
  const types = ['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE', 'INVALID_RECORD', 'CORRUPT_MESSAGE'];
  const e = error as { type?: string; cause?: { type?: string } };
  return types.includes(e?.type ?? '') || types.includes(e?.cause?.type ?? '');
}

/** Sent bytes between full collections: a few chunks of garbage at most, and few collections for small events. */
const COLLECT_EVERY_BYTES = 8 * 1024 * 1024;

@Command({
  name: 'publish',
  arguments: '<file>',
  description:
    'Validate newline-delimited JSON events from a file (or - for stdin) and append them to the event log: the Kafka topic KAFKA_TOPIC when KAFKA_BROKERS is set, ' +
    "else the embedded event log (the event_log table in the service's PostgreSQL). Exit 0: every line sent; 1: some lines refused or not sent (each named by line number on stderr) " +
    'or the log could not be reached; 2: usage error.',
})
export class PublishCommand extends CommandRunner {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    super();
  }

  async run(args: string[]): Promise<void> {
    refuseExtraArguments('publish', args, 1);
    // Every line of up to EVENT_MAX_BYTES leaves megabytes of garbage (its text, its parsed copy,
    // the driver's buffers). V8 collects it when its heuristics say, which on a busy machine was
    // after 250 MB of RSS for 120 one-MB lines; a full collection after sent chunks (4 MiB or
    // half the limit, at most every COLLECT_EVERY_BYTES) and a heap sized for memory over speed keep
    // it at ~150-165 MB whatever the load (184 MB with the collections alone, 201-249 MB with neither).
    v8.setFlagsFromString('--optimize-for-size');
    v8.setFlagsFromString('--expose-gc');
    const collect = vm.runInNewContext('gc') as () => void;
    const [file] = args;
    const fromStdin = file === '-';
    const size = fromStdin ? undefined : inputSize(file);
    const input = fromStdin ? process.stdin : createReadStream(file);

    // Opened first: a log that cannot be reached is one clear error, not a refusal per line.
    const sink = await openEventSink(this.config);
    let bytes = 0;
    let sent = 0;
    let refused = 0;
    const unsent: number[] = [];
    // Lines that cannot fit a message of EVENT_MAX_BYTES are refused here by number, in every mode;
    // the input is read in memory bounded by it, and sent in chunks bounded by the sink.
    const maxMessage = this.config.eventMaxBytes;
    const log = this.config.kafka ? 'the broker' : 'the event log';
    let pending: { line: number; key: string; value: Buffer }[] = [];
    let pendingBytes = 0;
    const refuse = (line: number, code: string, reason: string) => {
      refused++;
      progress.clear();
      process.stderr.write(`line ${line}: refused (${code}): ${reason}\n`);
    };
    const tooLarge = (line: number, bytes: number) =>
      refuse(line, 'too_large', `${bytes} bytes; ${log} takes messages up to ${maxMessage} bytes with key and framing (EVENT_MAX_BYTES)`);
    let sentSinceCollect = 0;
    const send = async (batch: typeof pending) => {
      await sink.send(batch.map(({ key, value }) => ({ key, value })));
      sent += batch.length;
      sentSinceCollect += batch.reduce((n, m) => n + m.value.length, 0);
      if (sentSinceCollect >= COLLECT_EVERY_BYTES) {
        sentSinceCollect = 0;
        collect();
      }
    };
    const flush = async () => {
      if (pending.length === 0) return;
      const batch = pending;
      pending = [];
      pendingBytes = 0;
      try {
        await send(batch);
      } catch (error) {
        if (!isRecordError(error)) {
          throw new Error(
            `sending lines ${batch[0].line}-${batch[batch.length - 1].line} failed: ${(error as Error).message}; ${sent} event(s) were sent before, none from line ${batch[0].line} on`,
          );
        }
        if (batch.length === 1) {
          unsent.push(batch[0].line);
          process.stderr.write(`line ${batch[0].line}: not sent: ${(error as Error).message}\n`);
          return;
        }
        // Find the line the log refuses; send the others.
        for (const one of batch) {
          try {
            await send([one]);
          } catch (e) {
            unsent.push(one.line);
            process.stderr.write(`line ${one.line}: not sent: ${(e as Error).message}\n`);
          }
        }
      }
    };
    // Events sent, their rate, and (for a file) the share read and an ETA; plain lines on a pipe.
    const progress = createProgress({ label: 'publish', unit: 'events' });
    try {
      for await (const { number: lineNo, bytes: lineBytes, value } of readLines(input, maxMessage)) {
        bytes += lineBytes + 1;
        if (value === undefined) {
          tooLarge(lineNo, lineBytes);
          continue;
        }
        const text = value.toString('utf8');
        if (text.trim() === '') continue;
        const decoded = decodeEvent(text, { maxFutureSkewMs: this.config.eventTimeMaxSkewMs });
        if (!decoded.ok) {
          refuse(lineNo, decoded.code, decoded.reason);
          continue;
        }
        // An erasure is keyed by no name: its own type (one partition for all erasures, which are rare).
        const key = decoded.event.type === 'customer.erased' ? 'customer.erased' : decoded.event.data.receiptId;
        if (lineBytes + Buffer.byteLength(key) + FRAMING_BYTES > maxMessage) {
          tooLarge(lineNo, lineBytes);
          continue;
        }
        if (pendingBytes + lineBytes > sink.chunkBytes) await flush();
        pending.push({ line: lineNo, key, value });
        pendingBytes += lineBytes;
        if (pending.length >= CHUNK) await flush();
        progress.update({ done: sent + pending.length, fraction: size ? Math.min(1, bytes / size) : undefined, detail: `${refused} refused` });
      }
      await flush();
    } finally {
      progress.stop();
      await sink.close();
    }
    const target = this.config.kafka ? `Kafka topic ${this.config.kafka.topic}` : `embedded event log (${this.config.eventLogTopic})`;
    const notSent = unsent.length > 0 ? `; not sent ${unsent.length} valid line(s): ${unsent.slice(0, 20).join(', ')}${unsent.length > 20 ? ', ...' : ''}` : '';
    process.stderr.write(`published ${sent} event(s) to ${target}; refused ${refused} line(s)${notSent}\n`);
    if (refused > 0 || unsent.length > 0) process.exitCode = 1;
  }
}

function inputSize(file: string): number {
  const unreadable = unreadableInput(file, 'an NDJSON file, or - for stdin');
  if (unreadable) throw new Error(`cannot read ${file}: ${unreadable}`);
  return statSync(file).size;
}
