import { refuseExtraArguments, UsageError } from './usage-error.js';
import { Inject } from '@nestjs/common';
import { Command, CommandRunner, Option, SubCommand } from 'nest-commander';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { openDatabase } from '../database/open-database.js';
import type { DataSource } from 'typeorm';
import { describeEmbeddedPosition, embeddedLogPosition } from '../ingestion/positions/embedded-origin.js';
import { describePosition, positionProblem, resetTarget, type PartitionPosition } from '../ingestion/positions/log-positions.js';
import { readPositions } from '../ingestion/positions/read-positions.js';

@SubCommand({ name: 'show', description: 'Per partition: the offset stored with the read models, the log start and end, and whether they fit' })
export class OffsetsShowCommand extends CommandRunner {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    super();
  }

  async run(args: string[]): Promise<void> {
    refuseExtraArguments('offsets show', args);
    const { db, close } = await openDatabase(this.config, 'offsets');
    try {
      const { topic, positions } = await readPositions(this.config, db);
      process.stdout.write(`topic ${topic}${this.config.kafka ? '' : ' (embedded event log)'}\n`);
      for (const p of positions) {
        const problem = positionProblem(p);
        // On Kafka, a stored offset beyond the topic's end may be the embedded log's (the two share
        // the topic name): said as the consumer says it, with the command that moves it.
        const embedded = problem && this.config.kafka ? await embeddedOrigin(db, topic, p) : undefined;
        const line = embedded ? describeEmbeddedPosition(topic, p.partition, p.stored!, embedded.logEnd, p) : describePosition(p);
        process.stdout.write(`${line}${p.stored !== undefined && !problem ? `, lag ${p.logEnd - p.stored}` : ''}\n`);
      }
      if (positions.some((p) => positionProblem(p))) process.exitCode = 3;
    } finally {
      await close();
    }
  }
}

/** Whether the partition's stored offset is a position in this database's embedded log (with the hash stored beside it). */
async function embeddedOrigin(db: DataSource, topic: string, p: PartitionPosition): Promise<{ logEnd: bigint } | undefined> {
  const [row] = (await db.query(`SELECT last_message_sha1 FROM read_model.projection_offsets WHERE topic = $1 AND partition = $2`, [topic, p.partition])) as {
    last_message_sha1: Buffer | null;
  }[];
  return embeddedLogPosition(db, topic, p.partition, p.stored, row?.last_message_sha1);
}

type ResetOptions = { to?: string; partition?: number };

@SubCommand({
  name: 'reset',
  description:
    'Move the offset stored with the read models for one partition: --to earliest (re-project what the log holds), latest (skip to the end) or an offset. For a blocked partition, or with the service stopped.',
})
export class OffsetsResetCommand extends CommandRunner {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    super();
  }

  async run(args: string[], options: ResetOptions): Promise<void> {
    refuseExtraArguments('offsets reset', args);
    if (options.to === undefined) throw new UsageError('offsets reset needs --to earliest|latest|<offset>');
    if (options.partition === undefined) throw new UsageError('offsets reset needs --partition <n>');
    const { db, close } = await openDatabase(this.config, 'offsets');
    try {
      const { topic, positions } = await readPositions(this.config, db);
      const position = positions.find((p) => p.partition === options.partition);
      if (!position) throw new Error(`topic ${topic} has no partition ${options.partition} (partitions: ${positions.map((p) => p.partition).join(', ')})`);
      const target = resetTarget(position, options.to);
      // Waits for a batch in flight on this partition (it locks the same row). The anchor of the last
      // message no longer applies: the operator has decided where the partition goes on.
      await db.query(
        `INSERT INTO read_model.projection_offsets (topic, partition, next_offset, last_message_sha1) VALUES ($1, $2, $3, NULL)
         ON CONFLICT (topic, partition) DO UPDATE SET next_offset = excluded.next_offset, last_message_sha1 = NULL, updated_at = now()`,
        [topic, position.partition, target.toString()],
      );
      process.stdout.write(
        `partition ${position.partition}: stored offset ${position.stored ?? 'none'} -> ${target} (log ${position.logStart}..${position.logEnd})\n`,
      );
      if (target > position.logStart && options.to !== 'earliest') {
        process.stdout.write(
          `events ${position.logStart}..${target - 1n} of partition ${position.partition} will not be projected; \`npm run cli -- rebuild\` re-projects everything the log holds\n`,
        );
      }
    } finally {
      await close();
    }
  }

  @Option({ flags: '--to <where>', description: 'earliest, latest, or an offset within the log' })
  parseTo(value: string): string {
    // Checked here, before the database is opened; whether an offset lies within the log is known only there.
    if (!/^(earliest|latest|\d+)$/.test(value)) throw new UsageError(`--to must be earliest, latest or an offset (got ${JSON.stringify(value)})`);
    return value;
  }

  @Option({ flags: '--partition <n>', description: 'the partition to move' })
  parsePartition(value: string): number {
    if (!/^\d+$/.test(value)) throw new UsageError(`--partition must be a partition number (got ${JSON.stringify(value)})`);
    return Number(value);
  }
}

@Command({
  name: 'offsets',
  description: 'Show or move the offsets stored with the read models (see docs/operations.md, "Topic reset and retention")',
  subCommands: [OffsetsShowCommand, OffsetsResetCommand],
})
export class OffsetsCommand extends CommandRunner {
  async run(): Promise<void> {
    throw new UsageError('offsets needs a subcommand: show, or reset --to earliest|latest|<offset> --partition <n>');
  }
}
