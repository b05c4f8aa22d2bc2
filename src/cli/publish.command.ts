import { createReadStream, statSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { Inject } from '@nestjs/common';
import { SingleBar, Presets } from 'cli-progress';
import { Command, CommandRunner } from 'nest-commander';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { decodeEvent } from '../events/decode-event.js';
import { openEventSink, type EventSink } from './event-sink.js';

const CHUNK = 1000;

@Command({
  name: 'publish',
  arguments: '<file>',
  description: 'Validate newline-delimited JSON events from a file (or - for stdin) and append them to the event log (Kafka or embedded)',
})
export class PublishCommand extends CommandRunner {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    super();
  }

  async run([file]: string[]): Promise<void> {
    const fromStdin = file === '-';
    const size = fromStdin ? undefined : statSync(file).size;
    const input = fromStdin ? process.stdin : createReadStream(file);
    const bar = process.stderr.isTTY ? new SingleBar({ format: 'publishing [{bar}] {percentage}% | {value}/{total} bytes | {sent} sent, {refused} refused', stream: process.stderr }, Presets.shades_classic) : undefined;
    bar?.start(size ?? 0, 0, { sent: 0, refused: 0 });

    let sink: EventSink | undefined;
    let lineNo = 0;
    let bytes = 0;
    let sent = 0;
    let refused = 0;
    let pending: { key: string; value: Buffer }[] = [];
    const flush = async () => {
      if (pending.length === 0) return;
      sink ??= await openEventSink(this.config);
      await sink.send(pending);
      sent += pending.length;
      pending = [];
    };
    try {
      for await (const line of createInterface({ input, crlfDelay: Infinity })) {
        lineNo++;
        bytes += Buffer.byteLength(line) + 1;
        if (line.trim() === '') continue;
        const decoded = decodeEvent(line);
        if (!decoded.ok) {
          refused++;
          bar?.stop();
          process.stderr.write(`line ${lineNo}: refused (${decoded.code}): ${decoded.reason}\n`);
          bar?.start(size ?? 0, bytes, { sent, refused });
          continue;
        }
        pending.push({ key: decoded.event.data.receiptId, value: Buffer.from(line) });
        if (pending.length >= CHUNK) await flush();
        bar?.update(size === undefined ? 0 : bytes, { sent: sent + pending.length, refused });
      }
      await flush();
    } finally {
      bar?.stop();
      await sink?.close();
    }
    const target = this.config.kafka ? `Kafka topic ${this.config.kafka.topic}` : `embedded event log (${this.config.eventLogTopic})`;
    process.stderr.write(`published ${sent} event(s) to ${target}; refused ${refused} line(s)\n`);
    if (refused > 0) process.exitCode = 1;
  }
}
