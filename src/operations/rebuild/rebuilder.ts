import { hostname } from 'node:os';
import { Logger } from '@nestjs/common';
import pg from 'pg';
import type { DataSource } from 'typeorm';
import type { AppConfig } from '../../config/app-config.js';
import type { DatabaseServer } from '../../database/database-server.js';
import { eventLogEndOffsets } from '../../event-log/event-log.js';
import { EventLogConsumer } from '../../ingestion/embedded/event-log.consumer.js';
import { createKafka } from '../../ingestion/kafka/kafka-client.js';
import { KafkaProjectionConsumer } from '../../ingestion/kafka/kafka-projection.consumer.js';
import { LoggingObserver } from '../../ingestion/logging-observer.js';
import type { ProjectionTarget } from '../../ingestion/projection-target.js';
import { Projector } from '../../ingestion/projector.js';
import { LIVE_PROJECTION_LOCK, REBUILD_LOCK } from '../../database/advisory-locks.js';
import { readPositions } from '../../ingestion/positions/read-positions.js';
import { FEED_TABLES, OLDEST_RUNNING, dropStampTriggerSql, installStampTriggerSql, stampSwitchedSql } from '../../change-feed/change-positions.sql.js';
import { failpoint } from '../../common/failpoint.js';
import { foldStaged, isStaging, prepareBulkLoad } from '../../projection/bulk/fold-staged.js';
import { compareGenerations, type TableDifference } from './compare.js';
import type { ProgressReporter } from './progress.js';
import { rebuildSql } from './rebuild.sql.js';
import { feedDeletionsSql } from '../../change-feed/feed-deletions.sql.js';

export type RebuildKind = 'rebuild' | 'verify';
export const GENERATION_SCHEMA: Record<RebuildKind, string> = { rebuild: 'read_model_next', verify: 'read_model_verify' };

export type RebuildResult =
  | { kind: 'rebuild'; id: string; resumed: boolean; generation: number; events: bigint; seconds: number }
  | { kind: 'verify'; id: string; differences: TableDifference[]; events: bigint; seconds: number };

export class RebuildError extends Error {}

/** The log a generation is read from changed under it (recreated, truncated): what it holds is void. */
class LogChangedError extends Error {}

type Offsets = Map<number, bigint>;
type RunningRebuild = { id: string; kind: string; schema_name: string };
type Runner = { consumer: KafkaProjectionConsumer | EventLogConsumer; stop(): Promise<void> };

const POLL_MS = 250;
const SWITCH_WAIT_MS = 120_000;
const sum = (o: Offsets) => [...o.values()].reduce((a, b) => a + b, 0n);

/**
 * Builds a complete new generation of the read models from the start of the log next to the live
 * one (bulk path: staged, folded, indexed; then the live projection code catches up), then swaps
 * it in atomically; or, for `verify`, builds a scratch generation the same way and reports how the
 * live one differs. One at a time (advisory lock).
 */
export class Rebuilder {
  private readonly logger = new Logger('rebuild');
  private lockClient?: pg.Client;

  constructor(
    private readonly config: AppConfig,
    private readonly db: DataSource,
    private readonly server: DatabaseServer,
    private readonly progress: ProgressReporter,
  ) {}

  async run(kind: RebuildKind, options: { allowPartialHistory?: boolean } = {}): Promise<RebuildResult> {
    const started = Date.now();
    await this.lock();
    let runner: Runner | undefined;
    const schema = GENERATION_SCHEMA[kind];
    try {
      const topic = this.topic;
      const [existing] = (await this.db.query(rebuildSql.running, [schema])) as {
        id: string;
        target_offsets: Record<string, string>;
        changes_from: string | null;
      }[];
      const resumed = kind === 'rebuild' && existing !== undefined;
      let id: string;
      let target: Offsets;
      let changesFrom: string;
      if (resumed) {
        id = existing.id;
        changesFrom = existing.changes_from ?? '0';
        target = new Map(Object.entries(existing.target_offsets).map(([p, o]) => [Number(p), BigInt(o)]));
        this.logger.log({
          msg: `resuming rebuild #${id} into ${schema}`,
          from: Object.fromEntries([...(await this.offsets(schema))].map(([p, o]) => [p, o.toString()])),
        });
      } else {
        if (existing) await this.db.query(rebuildSql.finish, [existing.id, 'aborted', JSON.stringify({ reason: 'superseded by a new verify' })]);
        if (!options.allowPartialHistory) await this.refusePartialHistory();
        changesFrom = await this.createGeneration(schema);
        if (options.allowPartialHistory) await this.startAtLogStart(schema);
        target = await this.logEndOffsets();
        [{ id }] = await this.db.query(rebuildSql.start, [
          kind,
          schema,
          JSON.stringify(Object.fromEntries([...target].map(([p, o]) => [p, o.toString()]))),
          this.owner,
          changesFrom,
        ]);
        this.logger.log({ msg: `${kind} #${id} into ${schema}`, topic, targetOffsets: Object.fromEntries([...target].map(([p, o]) => [p, o.toString()])) });
      }

      // verify never passes the live offsets, so both sides can be compared at the same positions
      const bounds: Offsets = kind === 'verify' ? await this.offsets('read_model') : new Map(target);
      if (await isStaging(this.db, schema)) await this.bulkLoad(kind, schema, new Map(bounds));
      runner = await this.startRunner({ schema, groupId: `${this.config.kafka?.groupId ?? 'embedded'}.${kind}`, bounds });

      await this.waitFor(schema, target, 'replaying', bounds, runner, kind === 'verify');
      if (kind === 'verify') {
        const differences = await this.verifyAgainstLive(schema, bounds);
        await runner.stop();
        runner = undefined;
        await this.db.query(`DROP SCHEMA ${schema} CASCADE`);
        await this.db.query(rebuildSql.finish, [id, 'verified', JSON.stringify({ differences })]);
        return { kind, id, differences, events: sum(await this.logEndOffsets()), seconds: (Date.now() - started) / 1000 };
      }

      await this.catchUp(schema, bounds, runner);
      const generation = await this.switchGenerations(schema, bounds, id, changesFrom);
      await runner.stop();
      runner = undefined;
      await this.db.query(`DROP SCHEMA IF EXISTS read_model_previous CASCADE`);
      return { kind, id, resumed, generation, events: sum(await this.offsets('read_model')), seconds: (Date.now() - started) / 1000 };
    } catch (error) {
      if (!(error instanceof LogChangedError)) throw error;
      await runner?.stop();
      runner = undefined;
      const ids = await this.abandon(schema, error.message);
      throw new RebuildError(
        `${kind} ${ids.map((i) => `#${i}`).join(', ')} abandoned and ${schema} dropped: the log changed while it was being read (${error.message}). ` +
          'The live read models are untouched; bring the live offsets back within the log if they are blocked too (offsets reset, docs/operations.md), then run it again',
      );
    } finally {
      this.progress.stop();
      await runner?.stop();
      await this.unlock();
    }
  }

  /** Marks the rebuilds writing `schema` aborted, with the reason, and drops it; returns their ids. */
  private async abandon(schema: string, reason: string): Promise<string[]> {
    // Without a running row, `rebuild --abort` got there first and dropped the generation itself.
    const mine = (await this.db.query(rebuildSql.running, [schema])) as RunningRebuild[];
    await this.drop(mine, `the log changed while it was being read: ${reason}`);
    return mine.map((r) => r.id);
  }

  /** Drops each rebuild's generation and records it as aborted with `reason`. */
  private async drop(rebuilds: readonly RunningRebuild[], reason: string): Promise<void> {
    for (const r of rebuilds) {
      await this.db.query(`DROP SCHEMA IF EXISTS ${r.schema_name} CASCADE`);
      await this.db.query(rebuildSql.finish, [r.id, 'aborted', JSON.stringify({ reason })]);
    }
  }

  /** Drops the generation being built; the live one is untouched. */
  async abort(): Promise<string> {
    await this.lock();
    try {
      const running = (await this.db.query(rebuildSql.anyRunning)) as RunningRebuild[];
      if (running.length === 0) return 'no rebuild to abort';
      await this.drop(running, 'rebuild --abort');
      return `aborted ${running.map((r) => `${r.kind} #${r.id} (${r.schema_name} dropped)`).join(', ')}; the live read models are untouched`;
    } finally {
      await this.unlock();
    }
  }

  private get topic(): string {
    return this.config.kafka?.topic ?? this.config.eventLogTopic;
  }

  private get owner(): string {
    return `${hostname()} pid ${process.pid}`;
  }

  private async lock(): Promise<void> {
    const client = new pg.Client({ connectionString: this.server.url, application_name: `rebuild ${this.owner}`.slice(0, 63) });
    await client.connect();
    const { rows } = await client.query(rebuildSql.tryLock, [REBUILD_LOCK]);
    if (!rows[0].locked) {
      const holder = await client.query(rebuildSql.lockHolder, [REBUILD_LOCK]);
      await client.end();
      const h = holder.rows[0];
      throw new RebuildError(
        h
          ? `another rebuild is running: held by "${h.application_name}" connected since ${new Date(h.backend_start).toISOString()}${h.client_addr ? ` from ${h.client_addr}` : ''}`
          : 'another rebuild is running',
      );
    }
    this.lockClient = client;
  }

  private async unlock(): Promise<void> {
    await this.lockClient?.query(rebuildSql.unlock, [REBUILD_LOCK]).catch(() => undefined);
    await this.lockClient?.end().catch(() => undefined);
    this.lockClient = undefined;
  }

  /**
   * Returns the change feed's high-water mark at creation: live rows changed from there on are
   * compared with the generation again when it is switched in (stampSwitchedSql).
   */
  private async createGeneration(schema: string): Promise<string> {
    const tables = (await this.db.query(rebuildSql.liveTables)) as { table_name: string }[];
    return this.db.transaction(async (m) => {
      await m.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await m.query(`CREATE SCHEMA ${schema}`);
      for (const { table_name } of tables) await m.query(`CREATE TABLE ${schema}.${table_name} (LIKE read_model.${table_name} INCLUDING ALL)`);
      // change-position triggers come with the fold (foldStaged), after the load
      await prepareBulkLoad(m, schema);
      const [{ mark }] = (await m.query(`SELECT ${OLDEST_RUNNING}::text AS mark`)) as { mark: string }[];
      return mark;
    });
  }

  /**
   * The bulk path: stages every message up to `bounds` (the live path's consumers, offsets and dead
   * letters, one unlogged append per batch), then folds the staged log into rows in one
   * transaction. The live path then continues from `bounds` as for any generation.
   */
  private async bulkLoad(kind: RebuildKind, schema: string, bounds: Offsets): Promise<void> {
    const runner = await this.startRunner({ schema, groupId: `${this.config.kafka?.groupId ?? 'embedded'}.${kind}`, bounds, stage: true });
    try {
      await this.waitFor(schema, bounds, 'staging', bounds, runner);
    } finally {
      await runner.stop();
    }
    const started = Date.now();
    const staged = await this.offsets(schema);
    this.progress.update({ phase: 'folding', done: 0n, total: sum(staged), positions: staged });
    await this.db.transaction(async (m) => {
      await foldStaged(m, schema, kind === 'rebuild' ? 'generation' : 'scratch', (step) =>
        this.logger.log({ msg: `folding the staged log: ${step}`, schema, seconds: (Date.now() - started) / 1000 }),
      );
      failpoint('before-fold-commit');
    });
    failpoint('after-fold-commit');
    this.progress.update({ phase: 'folding', done: sum(staged), total: sum(staged), positions: staged });
    this.logger.log({ msg: `folded ${sum(staged)} staged messages into ${schema}`, seconds: (Date.now() - started) / 1000 });
  }

  private async startRunner(target: ProjectionTarget): Promise<Runner> {
    const projector = new Projector(this.db, new LoggingObserver(), this.config);
    if (this.config.kafka) {
      const consumer = new KafkaProjectionConsumer(this.config, this.db, projector, target);
      await consumer.start();
      return { consumer, stop: () => consumer.stop() };
    }
    const consumer = new EventLogConsumer(this.config, this.server, this.db, projector, target);
    consumer.onApplicationBootstrap();
    return { consumer, stop: () => consumer.stop() };
  }

  private async offsets(schema: string): Promise<Offsets> {
    const rows = (await this.db.query(rebuildSql.offsets(schema), [this.topic])) as { partition: number; next_offset: string }[];
    return new Map(rows.map((r) => [r.partition, BigInt(r.next_offset)]));
  }

  /**
   * A generation built from a log that no longer starts at offset 0 would hold only the retained
   * events, and switching to it would drop everything older: refused unless asked for.
   */
  private async refusePartialHistory(): Promise<void> {
    const { topic, positions } = await readPositions(this.config, this.db);
    const cut = positions.filter((p) => p.logStart > 0n);
    if (cut.length === 0) return;
    throw new RebuildError(
      `the log of ${topic} no longer starts at offset 0 (${cut.map((p) => `partition ${p.partition} starts at ${p.logStart}`).join(', ')}): ` +
        'a rebuild would hold only the retained events. Pass --allow-partial-history to rebuild from what remains (docs/operations.md, "Retention")',
    );
  }

  /**
   * A new generation reads a partition from offset 0, and a batch starting later is a gap (events
   * lost). With --allow-partial-history the events before the log's start are known to be gone:
   * the generation starts at the start, or it would stop at that gap (and the rebuild fail).
   */
  private async startAtLogStart(schema: string): Promise<void> {
    const { topic, positions } = await readPositions(this.config, this.db);
    const cut = positions.filter((p) => p.logStart > 0n);
    if (cut.length === 0) return;
    await this.db.query(
      `INSERT INTO ${schema}.projection_offsets (topic, partition, next_offset) SELECT $1, * FROM unnest($2::int[], $3::bigint[]) ON CONFLICT DO NOTHING`,
      [topic, cut.map((p) => p.partition), cut.map((p) => p.logStart.toString())],
    );
  }

  /** Next offset to be written per partition of the log right now. */
  private async logEndOffsets(): Promise<Offsets> {
    if (!this.config.kafka) {
      const offsets = await eventLogEndOffsets(this.db, this.topic);
      return new Map([...offsets].map(([p, o]) => [p, BigInt(o)]));
    }
    const admin = createKafka(this.config.kafka, '-rebuild').admin();
    await admin.connect();
    try {
      const offsets = await admin.fetchTopicOffsets(this.topic);
      return new Map(offsets.map((o) => [o.partition, BigInt(o.high)]));
    } finally {
      await admin.disconnect();
    }
  }

  /**
   * Waits until the generation's offsets reach `goal` on every partition, reporting progress. A
   * partition the runner finds blocked (its offsets no longer in the log) would never get there.
   */
  private async waitFor(
    schema: string,
    goal: Offsets,
    phase: 'staging' | 'replaying' | 'catching up',
    bounds: Offsets,
    runner: Runner,
    followLive = false,
  ): Promise<void> {
    for (;;) {
      const health = runner.consumer.health();
      if (health.state === 'blocked') throw new LogChangedError(health.reason ?? 'a partition is blocked');
      if (followLive) for (const [p, o] of await this.offsets('read_model')) bounds.set(p, o);
      const at = await this.offsets(schema);
      const effectiveGoal = followLive ? new Map([...goal].map(([p, o]) => [p, (bounds.get(p) ?? 0n) < o ? (bounds.get(p) ?? 0n) : o])) : goal;
      this.progress.update({
        phase,
        done: sum(new Map([...effectiveGoal].map(([p, g]) => [p, (at.get(p) ?? 0n) < g ? (at.get(p) ?? 0n) : g]))),
        total: sum(effectiveGoal),
        positions: at,
      });
      if ([...effectiveGoal].every(([p, g]) => (at.get(p) ?? 0n) >= g)) return;
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  }

  /** Follows the live projection until the new generation is close behind it. */
  private async catchUp(schema: string, bounds: Offsets, runner: Runner): Promise<void> {
    for (let round = 0; round < 3; round++) {
      const live = await this.offsets('read_model');
      for (const [p, o] of live) if (o > (bounds.get(p) ?? 0n)) bounds.set(p, o);
      await this.waitFor(schema, live, 'catching up', bounds, runner);
    }
  }

  /**
   * One transaction: pause live batches (exclusive live-projection lock), let the new generation
   * reach exactly where live stopped, and swap the schemas. Live batches waiting on the lock then
   * resolve `read_model` to the new tables and continue from its offsets.
   */
  private async switchGenerations(schema: string, bounds: Offsets, id: string, changesFrom: string): Promise<number> {
    return this.db.transaction(async (m) => {
      await m.query('SELECT pg_advisory_xact_lock($1)', [LIVE_PROJECTION_LOCK]);
      const live = await this.offsets('read_model');
      for (const [p, o] of live) if (o > (bounds.get(p) ?? 0n)) bounds.set(p, o);
      const deadline = Date.now() + SWITCH_WAIT_MS;
      for (;;) {
        const at = await this.offsets(schema);
        this.progress.update({ phase: 'switching', done: sum(at), total: sum(live) > sum(at) ? sum(live) : sum(at), positions: at });
        if ([...live].every(([p, o]) => (at.get(p) ?? 0n) >= o)) break;
        if (Date.now() > deadline) throw new RebuildError('the new generation did not reach the live offsets in time; run rebuild again to resume');
        await new Promise((r) => setTimeout(r, POLL_MS));
      }
      for (const table of FEED_TABLES) {
        await m.query(dropStampTriggerSql(schema, table));
        const stamp = stampSwitchedSql(schema, table);
        await m.query(stamp.rebuilt);
        await m.query(stamp.changedLive, [changesFrom]);
      }
      for (const table of FEED_TABLES) await m.query(feedDeletionsSql.announceDropped(schema, table));
      await m.query(`DROP SCHEMA IF EXISTS read_model_previous CASCADE`);
      await m.query(`ALTER SCHEMA read_model RENAME TO read_model_previous`);
      await m.query(`ALTER SCHEMA ${schema} RENAME TO read_model`);
      for (const table of FEED_TABLES) await m.query(installStampTriggerSql('read_model', table, 'live'));
      const [{ generation }] = await m.query(rebuildSql.bumpGeneration);
      await m.query(rebuildSql.finish, [
        id,
        'switched',
        JSON.stringify({ generation, offsets: Object.fromEntries([...live].map(([p, o]) => [p, o.toString()])) }),
      ]);
      this.logger.log({ msg: `switched to generation ${generation}`, offsets: Object.fromEntries([...live].map(([p, o]) => [p, o.toString()])) });
      return generation as number;
    });
  }

  /**
   * Pauses live batches just long enough for the scratch generation to stand exactly where live
   * stands, takes a snapshot in which both agree, and compares inside that snapshot while live
   * ingestion goes on.
   */
  private async verifyAgainstLive(schema: string, bounds: Offsets): Promise<TableDifference[]> {
    const snapshot = this.db.createQueryRunner();
    await snapshot.connect();
    try {
      await this.db.transaction(async (m) => {
        await m.query('SELECT pg_advisory_xact_lock($1)', [LIVE_PROJECTION_LOCK]);
        const live = await this.offsets('read_model');
        for (const [p, o] of live) bounds.set(p, o);
        const deadline = Date.now() + SWITCH_WAIT_MS;
        for (;;) {
          const at = await this.offsets(schema);
          this.progress.update({ phase: 'verifying', done: sum(at), total: sum(live), positions: at });
          if ([...live].every(([p, o]) => (at.get(p) ?? 0n) === o)) break;
          if (Date.now() > deadline) throw new RebuildError('the scratch generation did not reach the live offsets in time');
          await new Promise((r) => setTimeout(r, POLL_MS));
        }
        await snapshot.startTransaction('REPEATABLE READ');
        await snapshot.query('SELECT 1');
      });
      const differences = await compareGenerations(snapshot.manager, schema);
      await snapshot.commitTransaction();
      return differences;
    } finally {
      if (snapshot.isTransactionActive) await snapshot.rollbackTransaction();
      await snapshot.release();
    }
  }
}
