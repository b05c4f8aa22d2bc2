import { readFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { Inject } from '@nestjs/common';
import { Command, CommandRunner, Option, SubCommand } from 'nest-commander';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { eraseCustomers, MAX_ERASURES_PER_CALL } from '../customers/erase-customer/erase-customers.js';
import { openDatabase } from '../database/open-database.js';
import { openEventSink } from './event-sink.js';
import { unreadableInput } from './input-file.js';
import { UsageError } from './usage-error.js';

type EraseOptions = { app?: string; file?: string };

@SubCommand({
  name: 'erase',
  arguments: '[usernames...]',
  description: 'Forget customers (docs/privacy.md): a customer.erased event per username, audit rows, redaction of the embedded log and dead letters',
})
export class CustomersEraseCommand extends CommandRunner {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    super();
  }

  async run(args: string[], options: EraseOptions = {}): Promise<void> {
    if (!options.app) throw new UsageError('customers erase needs --app <application id>');
    const usernames = [...args];
    if (options.file !== undefined) {
      const unreadable = unreadableInput(options.file, 'a file of usernames, one per line');
      if (unreadable) throw new UsageError(`customers erase: --file ${options.file}: ${unreadable}`);
      const text = await readFile(options.file, 'utf8').catch((error: NodeJS.ErrnoException) => {
        throw new UsageError(`customers erase: --file ${options.file}: ${error.code ?? error.message}`);
      });
      usernames.push(...text.split(/\r?\n/).filter((line) => line.trim() !== ''));
    }
    if (usernames.length === 0) throw new UsageError('customers erase needs usernames (arguments, or --file with one per line)');
    for (const name of usernames) {
      if (Buffer.byteLength(name, 'utf8') > 512 || name.includes('\u0000'))
        throw new UsageError(`a username must be 1-512 UTF-8 bytes without NUL (line of ${Buffer.byteLength(name, 'utf8')} bytes)`);
    }
    const { db, close } = await openDatabase(this.config, 'customers-erase');
    const sink = await openEventSink(this.config).catch(async (error: unknown) => {
      await close();
      throw error;
    });
    try {
      let events = 0;
      let redacted = 0;
      let deadLetters = 0;
      for (let i = 0; i < usernames.length; i += MAX_ERASURES_PER_CALL) {
        const result = await eraseCustomers(db, {
          appId: options.app,
          usernames: usernames.slice(i, i + MAX_ERASURES_PER_CALL),
          subject: `cli:${userInfo().username}`,
          via: 'cli',
          embeddedTopic: this.config.kafka ? undefined : this.config.eventLogTopic,
          send: (messages) => sink.send(messages),
        });
        events += result.eventIds.length;
        redacted += result.redactedEvents;
        deadLetters += result.redactedDeadLetters;
      }
      // The summary names no username: it may end up in an operator's log.
      process.stdout.write(
        `erased ${events} customer(s) of ${options.app}: ${events} customer.erased event(s) appended, ${redacted} stored event(s) and ${deadLetters} dead letter(s) redacted\n`,
      );
    } finally {
      await sink.close();
      await close();
    }
  }

  @Option({ flags: '--app <id>', description: 'the application the customers belong to' })
  parseApp(value: string): string {
    return value;
  }

  @Option({ flags: '--file <path>', description: 'a file of usernames, one per line (bulk)' })
  parseFile(value: string): string {
    return value;
  }
}

@Command({ name: 'customers', description: 'Customer operations: erase (docs/privacy.md)', subCommands: [CustomersEraseCommand] })
export class CustomersCommand extends CommandRunner {
  async run(): Promise<void> {
    throw new UsageError('customers needs a subcommand: erase');
  }
}
