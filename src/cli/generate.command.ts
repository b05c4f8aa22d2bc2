import { refuseExtraArguments, UsageError } from './usage-error.js';
import { createWriteStream, openSync } from 'node:fs';
import { once } from 'node:events';
import { Command, CommandRunner, Option } from 'nest-commander';
import { generateEvents } from '../generate/generate-events.js';

type GenerateCliOptions = { seed: number; events: number; out?: string };

@Command({
  name: 'generate',
  description: 'Write a deterministic, realistic stream of purchase events as NDJSON (several apps, renewals, trials, refunds, consumables, three years)',
})
export class GenerateCommand extends CommandRunner {
  async run(args: string[], options: GenerateCliOptions): Promise<void> {
    refuseExtraArguments('generate', args);
    // Opened here so a path that cannot be written is one clear error, not a stream's unhandled event.
    const out = options.out && options.out !== '-' ? createWriteStream('', { fd: openOutput(options.out) }) : process.stdout;
    let buffer = '';
    for (const event of generateEvents({ seed: options.seed, events: options.events })) {
      buffer += JSON.stringify(event) + '\n';
      if (buffer.length > 1 << 20) {
        if (!out.write(buffer)) await once(out, 'drain');
        buffer = '';
      }
    }
    // Wait for the last write: the CLI exits explicitly, and a pipe is written asynchronously.
    await new Promise<void>((resolve, reject) => out.write(buffer, (error) => (error ? reject(error) : resolve())));
    if (out !== process.stdout) {
      out.end();
      await once(out, 'finish');
    }
  }

  @Option({ flags: '--seed <n>', description: 'random seed', defaultValue: 1 })
  parseSeed(value: string): number {
    return positiveInt(value, '--seed');
  }

  @Option({ flags: '--events <n>', description: 'number of events', defaultValue: 10_000 })
  parseEvents(value: string): number {
    return positiveInt(value, '--events');
  }

  @Option({ flags: '--out <file>', description: 'output file (default: stdout)' })
  parseOut(value: string): string {
    return value;
  }
}

function positiveInt(value: string, flag: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new UsageError(`${flag} must be a positive integer`);
  return Number(value);
}

function openOutput(file: string): number {
  try {
    return openSync(file, 'w');
  } catch (error) {
    throw new Error(`cannot write ${file}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such directory' : (error as Error).message}`);
  }
}
