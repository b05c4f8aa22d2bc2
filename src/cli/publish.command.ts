import { createProgress } from '../common/progress.js';
import { refuseExtraArguments } from './usage-error.js';
import { createReadStream, statSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { Inject } from '@nestjs/common';
import { Command, CommandRunner } from 'nest-commander';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { decodeEvent } from '../events/decode-event.js';
import { openEventSink, type EventSink } from './event-sink.js';

const CHUNK = 1000;

/** Kafka refused the records themselves (not the connection): worth finding the line by line. */
function isRecordError(error: unknown): boolean {
  const types = ['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE', 'INVALID_RECORD', 'CORRUPT_MESSAGE'];
  const e = error as { type?: string; cause?: { type?: string } };
  return types.includes(e?.type ?? '') || types.includes(e?.cause?.type ?? '');
}

@Command({
  name: 'publish',
  arguments: '<file>',
  description: 'Validate newline-delimited JSON events from a file (or - for stdin) and append them to the event log (Kafka or embedded)',
})
export class PublishCommand extends CommandRunner {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    super();
  }

  async run(args: string[]): Promise<void> {
    refuseExtraArguments('publish', args, 1);
    const [file] = args;
    const fromStdin = file === '-';
    const size = fromStdin ? undefined : statSync(file).size;
    const input = fromStdin ? process.stdin : createReadStream(file);
    // Events sent, their rate, and (for a file) the share read and an ETA; plain lines on a pipe.
    const progress = createProgress({ label: 'publish', unit: 'events' });

    let sink: EventSink | undefined;
    let lineNo = 0;
    let bytes = 0;
    let sent = 0;
    let refused = 0;
    const unsent: number[] = [];
    // Kafka refuses a record batch over message.max.bytes: lines that cannot fit are refused here by
    // number, and chunks are kept well under it so valid lines never share a batch that is refused.
    const maxMessage = this.config.kafka?.maxMessageBytes;
    const chunkBytes = maxMessage === undefined ? Infinity : Math.floor(maxMessage / 2);
    let pending: { line: number; key: string; value: Buffer }[] = [];
    let pendingBytes = 0;
    const refuse = (line: number, code: string, reason: string) => {
      refused++;
      progress.stop();
      process.stderr.write(`line ${line}: refused (${code}): ${reason}\n`);
    };
    const send = async (batch: typeof pending) => {
      await sink!.send(batch.map(({ key, value }) => ({ key, value })));
      sent += batch.length;
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
          throw new Error(`sending lines ${batch[0].line}-${batch[batch.length - 1].line} failed: ${(error as Error).message}; ${sent} event(s) were sent before`);
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
    // Opened first: a log that cannot be reached is one clear error, not a refusal per line.
    sink = await openEventSink(this.config);
    try {
      for await (const line of createInterface({ input, crlfDelay: Infinity })) {
        lineNo++;
        const lineBytes = Buffer.byteLength(line);
        bytes += lineBytes + 1;
        if (line.trim() === '') continue;
        const decoded = decodeEvent(line, { maxFutureSkewMs: this.config.eventTimeMaxSkewMs });
        if (!decoded.ok) {
          refuse(lineNo, decoded.code, decoded.reason);
          continue;
        }
        const key = decoded.event.data.receiptId;
        if (maxMessage !== undefined && lineBytes + Buffer.byteLength(key) + 1024 > maxMessage) {
          refuse(lineNo, 'too_large', `${lineBytes} bytes; the broker takes messages up to ${maxMessage} bytes (KAFKA_MAX_MESSAGE_BYTES)`);
          continue;
        }
        if (pendingBytes + lineBytes > chunkBytes) await flush();
        pending.push({ line: lineNo, key, value: Buffer.from(line) });
        pendingBytes += lineBytes;
        if (pending.length >= CHUNK) await flush();
        progress.update({ done: sent + pending.length, fraction: size ? Math.min(1, bytes / size) : undefined, detail: `${refused} refused` });
      }
      await flush();
    } finally {
      progress.stop();
      await sink?.close();
    }
    const target = this.config.kafka ? `Kafka topic ${this.config.kafka.topic}` : `embedded event log (${this.config.eventLogTopic})`;
    const notSent = unsent.length > 0 ? `; not sent ${unsent.length} valid line(s): ${unsent.slice(0, 20).join(', ')}${unsent.length > 20 ? ', ...' : ''}` : '';
    process.stderr.write(`published ${sent} event(s) to ${target}; refused ${refused} line(s)${notSent}\n`);
    if (refused > 0 || unsent.length > 0) process.exitCode = 1;
  }
}
