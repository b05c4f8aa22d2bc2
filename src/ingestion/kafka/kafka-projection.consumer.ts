import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap, Optional } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Partitioners, type Admin, type Consumer, type EachBatchPayload, type Kafka, type Producer } from 'kafkajs';
import { DataSource } from 'typeorm';
import { APP_CONFIG, type AppConfig, type KafkaSettings } from '../../config/app-config.js';
import type { BlockedPartition, ConsumerHealth, ConsumerStatus } from '../../health/consumer-status.js';
import { failpoint } from '../../common/failpoint.js';
import { messageSha1, type BatchOutcome, type DeadLetter, type LogMessage } from '../../events/log-batch.js';
import { describePosition, positionProblem, type PartitionPosition } from '../positions/log-positions.js';
import { describeEmbeddedPosition, embeddedLogPosition, MOVE_TO_KAFKA_COMMAND } from '../positions/embedded-origin.js';
import { LIVE_TARGET, PROJECTION_TARGET, type ProjectionTarget } from '../projection-target.js';
import { BatchAbandoned, Projector, type RetryControl } from '../projector.js';
import { finishOrEndBatches } from '../stop-wait.js';
import { backoffMs } from '../failure-policy.js';
import { createKafka, dlqTopic, ensureTopics } from './kafka-client.js';
import { fitDeadLetter } from './dead-letter-message.js';
import { RoundSharing } from './round-sharing.js';
import { deadLetterTooLarge } from '../dead-letter-too-large.js';
import { PROJECTION_OBSERVER, type ProjectionObserver } from '../projection-observer.js';
import { CatchUpLog } from '../catch-up-log.js';

const logMessage = (m: { offset: string; key: Buffer | null; value: Buffer | null; timestamp?: string }): LogMessage => ({
  offset: m.offset,
  key: m.key ?? null,
  value: m.value,
  timestamp: m.timestamp,
});

/** No fetch or heartbeat answered for this long: the broker counts as unreachable. */
const BROKER_SILENCE_MS = 15_000;
/** More crashes than this within the window: readiness reports `crashed` (restarts go on). */
const CRASH_BUDGET = 5;
const CRASH_WINDOW_MS = 5 * 60_000;
const TICK_MS = 1_000;
const BLOCKED_RECHECK_MS = 5_000;

/**
 * The live projection from Kafka. Offsets of record live in the read-model database, written in the
 * same transaction as the rows; on every assignment the consumer compares them with the log and
 * seeks there, or blocks the partition when the log no longer holds them. Kafka's committed offsets
 * follow after each database commit, so lag tools work, but are never trusted. The consumer restarts
 * itself after any crash (kafkajs' own restart is off, so topics are ensured on every start).
 */
@Injectable()
export class KafkaProjectionConsumer implements OnApplicationBootstrap, BeforeApplicationShutdown, ConsumerStatus {
  private readonly logger = new Logger('kafka-consumer');
  private readonly catchUp = new CatchUpLog((line) => this.logger.log(line));
  private readonly settings: KafkaSettings;
  /** EVENT_MAX_BYTES: larger messages (the broker may allow them) are dead-lettered too_large. */
  private readonly maxMessageBytes: number;
  private kafka!: Kafka;
  private consumer?: Consumer;
  private producer?: Producer;
  private admin?: Admin;
  private started = false;
  private stopping = false;
  private restartTimer?: NodeJS.Timeout;
  private ticker?: NodeJS.Timeout;
  private restarts = 0;
  private crashes: number[] = [];
  private lastContactAt = 0;
  private lastBlockedCheck = 0;
  private reported?: string;
  /** Partitions paused because their stored offset lies outside the log. */
  private readonly blocked = new Map<number, BlockedPartition>();
  /** Next offset of record per assigned partition, as of the last assignment or commit. */
  private readonly nextOffsets = new Map<number, bigint>();
  /** Per partition: the message just before the stored offset, to be found unchanged on the next fetch. */
  private readonly anchors = new Map<number, { offset: bigint; sha1: Buffer }>();
  private assigned: number[] = [];
  private readonly sharing: RoundSharing;
  /**
   * Partitions paused by round sharing, with the rest of their last fetched batch: applied here in
   * shares (drainHeld) instead of being fetched and decoded again every round, then resumed.
   */
  private readonly held = new Map<number, { rest: LogMessage[]; logEnd: bigint }>();
  /** Bumped whenever partitions are placed anew (assignment, restart): held work from before is void. */
  private placement = 0;
  private draining?: Promise<void>;
  /** Batches inside kafkajs' eachBatch: awaited on stop, before kafkajs stops committing offsets. */
  private readonly inFlight = new Set<Promise<void>>();
  /** Aborted by a stop that has waited long enough: the batches' transactions are ended. */
  private readonly abortBatches = new AbortController();

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    @InjectDataSource() private readonly db: DataSource,
    private readonly projector: Projector,
    @Optional() @Inject(PROJECTION_TARGET) private readonly target: ProjectionTarget = LIVE_TARGET,
    @Optional() @Inject(PROJECTION_OBSERVER) private readonly observer?: ProjectionObserver,
  ) {
    this.settings = config.kafka!;
    this.maxMessageBytes = config.eventMaxBytes;
    this.sharing = new RoundSharing(this.settings.roundShareMessages);
    this.topic = this.settings.topic;
  }

  readonly topic: string;

  async endOffsets(): Promise<Map<number, bigint>> {
    if (!this.admin) throw new Error('Kafka admin client not connected');
    const offsets = await this.admin.fetchTopicOffsets(this.topic);
    return new Map(offsets.map((o) => [o.partition, BigInt(o.high)]));
  }

  health(): ConsumerHealth {
    if (this.stopping) return { state: 'stopped' };
    const recent = this.crashes.filter((t) => Date.now() - t < CRASH_WINDOW_MS).length;
    if (recent > CRASH_BUDGET) return { state: 'crashed', reason: `${recent} crashes in the last ${CRASH_WINDOW_MS / 60_000} min; restarting with backoff` };
    if (!this.started) return { state: 'connecting', reason: this.restarts > 0 ? `restarting (attempt ${this.restarts})` : 'connecting to the broker' };
    if (this.blocked.size > 0) {
      const blocked = [...this.blocked.values()].sort((a, b) => a.partition - b.partition);
      return { state: 'blocked', reason: blocked.map((b) => b.reason).join('; '), blocked };
    }
    const silence = Date.now() - this.lastContactAt;
    if (silence > BROKER_SILENCE_MS) return { state: 'connecting', reason: `no answer from the broker for ${Math.round(silence / 1000)} s` };
    return this.projector.health() ?? { state: 'running' };
  }

  onApplicationBootstrap(): void {
    // In the background: the HTTP API serves the current read models even while Kafka is away.
    this.ticker = setInterval(() => void this.tick(), TICK_MS);
    this.ticker.unref();
    void this.start();
  }

  /** Before Nest's onApplicationShutdown hooks, which close the database pool under a batch in flight. */
  async beforeApplicationShutdown(): Promise<void> {
    await this.stop();
  }

  /** Stops consuming once the batches in flight have committed, to PostgreSQL and then to Kafka. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    clearInterval(this.ticker);
    // kafkajs drops offset commits (silently) once its disconnect has begun: let the batches finish
    // first, within a bound (a batch may wait on a lock, Kafka may be away) that leaves the rest of
    // the shutdown its time. Past it the offsets of record are still right: they are in PostgreSQL.
    // (kafkajs' own disconnect waits for eachBatch to return, ended or not.)
    await finishOrEndBatches(() => Promise.allSettled(this.inFlight), this.abortBatches, this.logger);
    await this.disconnect();
  }

  private async disconnect(): Promise<void> {
    this.placement++;
    this.held.clear();
    await this.draining;
    await this.consumer?.disconnect().catch(() => undefined);
    await this.producer?.disconnect().catch(() => undefined);
    await this.admin?.disconnect().catch(() => undefined);
  }

  async start(): Promise<void> {
    if (this.stopping) return;
    this.started = false;
    try {
      this.kafka = createKafka(this.settings);
      this.admin = this.kafka.admin();
      await this.admin.connect();
      await ensureTopics(this.admin, this.settings.topic, (error, topics) => {
        this.logger.warn({ err: error.message, topics, msg: 'could not create topics; expecting them to exist' });
      });
      // Dead letters are produced inside the batch transaction and re-sent if it rolls back: at least
      // once, so an idempotent producer (which wants unlimited retries) buys nothing here.
      this.producer = this.kafka.producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner });
      await this.producer.connect();
      const consumer = this.kafka.consumer({
        groupId: this.target.groupId ?? this.settings.groupId,
        allowAutoTopicCreation: false,
        sessionTimeout: this.settings.sessionTimeoutMs,
        rebalanceTimeout: this.settings.sessionTimeoutMs * 2,
        heartbeatInterval: Math.min(3_000, Math.floor(this.settings.sessionTimeoutMs / 3)),
        maxBytesPerPartition: this.settings.maxBytesPerPartition,
        maxBytes: Math.max(10 * 1024 * 1024, this.settings.maxBytesPerPartition),
        maxWaitTimeInMs: 250,
        // kafkajs' own restart would skip start(): topics would not be ensured, state not reset.
        retry: { retries: 8, restartOnFailure: async () => false },
      });
      this.consumer = consumer;
      consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => void this.onAssignment(consumer, payload.memberAssignment));
      const contact = () => (this.lastContactAt = Date.now());
      consumer.on(consumer.events.FETCH, contact);
      consumer.on(consumer.events.HEARTBEAT, contact);
      consumer.on(consumer.events.CRASH, ({ payload }) => {
        this.crashes.push(Date.now());
        this.logger.error({ err: payload.error?.message, msg: 'consumer crashed; restarting' });
        this.scheduleRestart();
      });
      await consumer.connect();
      await consumer.subscribe({ topic: this.settings.topic, fromBeginning: true });
      await consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        // While one partition's batch waits on PostgreSQL, another's is fetched and decoded.
        partitionsConsumedConcurrently: this.settings.partitionsConcurrency,
        eachBatch: async (payload) => {
          const batch = this.onBatch(consumer, payload);
          this.inFlight.add(batch);
          try {
            await batch;
          } finally {
            this.inFlight.delete(batch);
          }
        },
      });
      // stop() came while this start was under way: its disconnect may have missed this consumer.
      if (this.stopping) {
        await this.disconnect();
        return;
      }
      this.started = true;
      this.restarts = 0;
      contact();
      this.logger.log({ topic: this.settings.topic, groupId: this.target.groupId ?? this.settings.groupId, schema: this.target.schema, msg: 'consuming' });
    } catch (error) {
      this.logger.warn({ err: (error as Error).message, msg: 'could not start the Kafka consumer; retrying' });
      this.scheduleRestart();
    }
  }

  private scheduleRestart(): void {
    if (this.stopping) return;
    this.started = false;
    clearTimeout(this.restartTimer);
    const wait = backoffMs(this.restarts++);
    this.restartTimer = setTimeout(async () => {
      await this.disconnect();
      void this.start();
    }, wait);
  }

  /** Logs one line per state change, and gives blocked partitions another look every few seconds. */
  private async tick(): Promise<void> {
    const health = this.health();
    const summary = `${health.state}${health.reason ? `: ${health.reason}` : ''}`;
    if (summary !== this.reported) {
      const line = { state: health.state, reason: health.reason, msg: `consumer ${health.state}` };
      if (health.state === 'running') this.logger.log(line);
      else if (health.state !== 'connecting' || this.reported !== undefined) this.logger.warn(line);
      this.reported = summary;
    }
    if (this.blocked.size > 0 && this.consumer && Date.now() - this.lastBlockedCheck > BLOCKED_RECHECK_MS) {
      this.lastBlockedCheck = Date.now();
      await this.placePartitions(this.consumer, [...this.blocked.keys()]).catch((error: Error) =>
        this.logger.debug({ err: error.message, msg: 'could not re-check blocked partitions' }),
      );
    }
  }

  private async onAssignment(consumer: Consumer, assignment: Record<string, number[]>): Promise<void> {
    this.assigned = assignment[this.settings.topic] ?? [];
    // Every assigned partition is placed (sought) again below; held rests are fetched again.
    this.placement++;
    if (this.held.size > 0) consumer.resume([{ topic: this.settings.topic, partitions: [...this.held.keys()] }]);
    this.held.clear();
    this.sharing.assigned();
    for (const partition of [...this.blocked.keys()]) if (!this.assigned.includes(partition)) this.blocked.delete(partition);
    for (const partition of this.nextOffsets.keys()) if (!this.assigned.includes(partition)) this.catchUp.forget(partition);
    this.nextOffsets.clear();
    this.anchors.clear();
    if (this.assigned.length === 0) return;
    try {
      await this.placePartitions(consumer, this.assigned);
    } catch (error) {
      // Without positions nothing may be consumed safely: restart and look again.
      this.logger.warn({ err: (error as Error).message, msg: 'could not read stored and log offsets on assignment; restarting' });
      this.scheduleRestart();
    }
  }

  /**
   * Compares each partition's stored offset with the log and seeks there, or pauses the partition
   * (blocked) when the log no longer holds it. A reset by the operator unblocks it on the next look.
   */
  private async placePartitions(consumer: Consumer, partitions: number[]): Promise<void> {
    const topic = this.settings.topic;
    const [rows, log] = await Promise.all([
      this.db.query(
        `SELECT partition, next_offset::text AS next_offset, last_message_sha1 FROM ${this.target.schema}.projection_offsets WHERE topic = $1 AND partition = ANY($2::int[])`,
        [topic, partitions],
      ) as Promise<{ partition: number; next_offset: string; last_message_sha1: Buffer | null }[]>,
      this.admin!.fetchTopicOffsets(topic),
    ]);
    const stored = new Map(rows.map((r) => [r.partition, BigInt(r.next_offset)]));
    const anchors = new Map(rows.filter((r) => r.last_message_sha1).map((r) => [r.partition, r.last_message_sha1!]));
    const ends = new Map(log.map((o) => [o.partition, { low: BigInt(o.low), high: BigInt(o.high) }]));
    const placed: Record<number, string> = {};
    for (const partition of partitions) {
      if (!this.assigned.includes(partition)) continue;
      const end = ends.get(partition);
      if (!end) continue;
      const position: PartitionPosition = { partition, logStart: end.low, logEnd: end.high, stored: stored.get(partition) };
      const blockedAt = this.blocked.get(partition);
      // Blocked stays blocked until the operator moves the stored offset (offsets reset, rebuild):
      // a recreated topic growing past the old offset must not unblock it by itself.
      if (blockedAt && blockedAt.storedOffset === (position.stored?.toString() ?? null)) continue;
      if (positionProblem(position)) {
        this.blockWith(consumer, position, await this.blockReason(position, anchors.get(partition)));
        continue;
      }
      const from = position.stored ?? end.low;
      this.nextOffsets.set(partition, from);
      // Start one message early to check that the log still holds the message projected last.
      const anchor = anchors.get(partition);
      if (anchor && from > end.low) this.anchors.set(partition, { offset: from - 1n, sha1: anchor });
      else this.anchors.delete(partition);
      consumer.seek({ topic, partition, offset: (this.anchors.has(partition) ? from - 1n : from).toString() });
      if (this.blocked.delete(partition)) {
        consumer.resume([{ topic, partitions: [partition] }]);
        this.logger.warn({ partition, offset: from.toString(), msg: 'partition unblocked: its stored offset lies within the log again' });
      }
      placed[partition] = from.toString();
    }
    if (Object.keys(placed).length > 0) this.logger.log({ partitions: placed, msg: 'assigned; resuming from stored offsets' });
  }

  private block(consumer: Consumer, p: PartitionPosition): void {
    this.blockWith(consumer, p, describePosition(p));
  }

  /**
   * A stored offset outside the log. The embedded log and the topic share their name, so a database
   * fed by the embedded log looks like a recreated topic here: said as what it is, with the command.
   */
  private async blockReason(p: PartitionPosition, lastMessageSha1: Buffer | undefined): Promise<string> {
    const embedded = await embeddedLogPosition(this.db, this.settings.topic, p.partition, p.stored, lastMessageSha1).catch(() => undefined);
    return embedded ? describeEmbeddedPosition(this.settings.topic, p.partition, p.stored!, embedded.logEnd, p) : describePosition(p);
  }

  private blockWith(consumer: Consumer, p: PartitionPosition, reason: string): void {
    consumer.pause([{ topic: this.settings.topic, partitions: [p.partition] }]);
    if (this.blocked.has(p.partition)) return;
    this.blocked.set(p.partition, {
      partition: p.partition,
      storedOffset: p.stored?.toString() ?? null,
      logStart: p.logStart.toString(),
      logEnd: p.logEnd.toString(),
      reason,
    });
    const remedy = reason.includes(MOVE_TO_KAFKA_COMMAND) ? '' : ' runs `offsets reset` or `rebuild` (docs/operations.md)';
    this.logger.error({ partition: p.partition, msg: `${reason}; not consuming this partition until an operator${remedy || ' does so'}` });
  }

  private async onBatch(consumer: Consumer, { batch, heartbeat, isRunning, isStale, resolveOffset }: EachBatchPayload): Promise<void> {
    if (batch.messages.length === 0 || this.stopping || !isRunning() || isStale() || this.blocked.has(batch.partition) || this.held.has(batch.partition))
      return;
    // The log now ends before what was projected: the topic was recreated or truncated under us
    // (kafkajs would otherwise reset the fetch position and the stored offset would hide new events).
    const expected = this.nextOffsets.get(batch.partition);
    if (expected !== undefined && BigInt(batch.highWatermark) < expected) {
      this.block(consumer, { partition: batch.partition, logStart: 0n, logEnd: BigInt(batch.highWatermark), stored: expected });
      return;
    }
    const anchor = this.anchors.get(batch.partition);
    if (anchor) {
      this.anchors.delete(batch.partition);
      const first = batch.messages[0];
      if (BigInt(first.offset) === anchor.offset && !messageSha1(first.value).equals(anchor.sha1)) {
        const p = { partition: batch.partition, logStart: 0n, logEnd: BigInt(batch.highWatermark), stored: expected };
        const embedded = await embeddedLogPosition(this.db, this.settings.topic, batch.partition, expected, anchor.sha1).catch(() => undefined);
        this.blockWith(
          consumer,
          p,
          embedded
            ? describeEmbeddedPosition(this.settings.topic, batch.partition, expected!, embedded.logEnd, p)
            : `partition ${batch.partition}: the message at offset ${anchor.offset} is not the one projected there: the topic was recreated or rewritten`,
        );
        return;
      }
    }
    const bound = this.target.bounds?.get(batch.partition);
    const bounded = bound === undefined ? batch.messages : batch.messages.filter((m) => BigInt(m.offset) < bound);
    const within = this.sharing.take(batch, bounded);
    if (within.length === 0) {
      // At the bound: fetch again from there later, when the bound may have moved.
      consumer.seek({ topic: batch.topic, partition: batch.partition, offset: String(bound) });
      await new Promise((r) => setTimeout(r, 200));
      return;
    }
    const messages = within.map(logMessage);
    const control = { shouldContinue: () => isRunning() && !isStale() && !this.stopping, heartbeat };
    const outcome = await this.applyMessages(consumer, batch.partition, messages, BigInt(batch.highWatermark), control);
    if (outcome === undefined) return;
    resolveOffset(messages[messages.length - 1].offset);
    if (within.length < bounded.length) this.hold(consumer, batch.partition, bounded.slice(within.length).map(logMessage), BigInt(batch.highWatermark));
    // beyond the bound: fetched again from here
    else if (within.length < batch.messages.length) consumer.seek({ topic: batch.topic, partition: batch.partition, offset: outcome.nextOffset });
    await heartbeat();
  }

  /**
   * Applies messages of one partition in order: in one batch, but for messages over EVENT_MAX_BYTES,
   * each dead-lettered on its own between the batches of those around it. Undefined when given up
   * or the partition was blocked.
   */
  private async applyMessages(
    consumer: Consumer,
    partition: number,
    messages: LogMessage[],
    logEnd: bigint,
    control: RetryControl,
  ): Promise<Extract<BatchOutcome, { kind: 'applied' }> | undefined> {
    const tooLarge = (m: LogMessage) => (m.value?.length ?? 0) + (m.key?.length ?? 0) > this.maxMessageBytes;
    let outcome: Extract<BatchOutcome, { kind: 'applied' }> | undefined;
    for (let start = 0; start < messages.length;) {
      let end = start;
      while (end < messages.length && !tooLarge(messages[end])) end++;
      if (start > 0 && !control.shouldContinue()) return undefined;
      if (end > start) {
        outcome = await this.applyBatch(consumer, partition, messages.slice(start, end), logEnd, control);
      } else {
        outcome = await this.deadLetterTooLarge(consumer, partition, messages[start], messages[start - 1]?.offset, logEnd, control);
        end++;
      }
      if (outcome === undefined) return undefined;
      start = end;
    }
    return outcome;
  }

  private async deadLetterTooLarge(
    consumer: Consumer,
    partition: number,
    message: LogMessage,
    follows: string | undefined,
    logEnd: bigint,
    control: RetryControl,
  ): Promise<Extract<BatchOutcome, { kind: 'applied' }> | undefined> {
    if (!control.shouldContinue()) return undefined;
    const started = performance.now();
    const value = message.value ?? Buffer.alloc(0);
    const key = message.key === null ? null : Buffer.isBuffer(message.key) ? message.key : Buffer.from(message.key);
    const letter = {
      topic: this.settings.topic,
      partition,
      offset: message.offset,
      bytes: value.length + (key?.length ?? 0),
      key,
      value,
      sha1: messageSha1(value),
    };
    const outcome = await deadLetterTooLarge(this.db, letter, this.maxMessageBytes, {
      schema: this.target.schema,
      follows,
      // the .dlq copy is cut from the whole value, so its headers give the original size
      beforeCommit: (deadLetters) => this.publishDeadLetters(deadLetters.map((d) => ({ ...d, value }))),
    });
    this.observer?.batchApplied({ topic: this.settings.topic, partition, messages: [message] }, outcome, performance.now() - started);
    return this.settle(consumer, partition, outcome, message.offset, logEnd);
  }

  private async applyBatch(
    consumer: Consumer,
    partition: number,
    messages: LogMessage[],
    logEnd: bigint,
    control: RetryControl,
  ): Promise<Extract<BatchOutcome, { kind: 'applied' }> | undefined> {
    let outcome;
    try {
      outcome = await this.projector.apply({ topic: this.settings.topic, partition, messages }, control, {
        schema: this.target.schema,
        stage: this.target.stage,
        signal: this.abortBatches.signal,
        beforeCommit: (deadLetters) => this.publishDeadLetters(deadLetters),
      });
      failpoint('after-db-commit');
    } catch (error) {
      if (error instanceof BatchAbandoned) return undefined;
      throw error;
    }
    return this.settle(consumer, partition, outcome, messages[0].offset, logEnd);
  }

  /** After a batch's transaction: blocks the partition at a gap, or commits the new offset to Kafka too. */
  private async settle(
    consumer: Consumer,
    partition: number,
    outcome: BatchOutcome,
    firstOffset: string,
    logEnd: bigint,
  ): Promise<Extract<BatchOutcome, { kind: 'applied' }> | undefined> {
    if (outcome.kind === 'gap') {
      // Events between the stored offset and this batch no longer exist (retention passed them):
      // never skipped silently. The next look at the partition names the offsets.
      this.block(consumer, { partition, logStart: BigInt(firstOffset), logEnd, stored: BigInt(outcome.storedOffset) });
      return undefined;
    }
    this.nextOffsets.set(partition, BigInt(outcome.nextOffset));
    await consumer.commitOffsets([{ topic: this.settings.topic, partition, offset: outcome.nextOffset }]);
    this.catchUp.batchApplied(partition, Number(BigInt(outcome.nextOffset) - BigInt(firstOffset)), BigInt(outcome.nextOffset), logEnd);
    return outcome;
  }

  /** Keeps the rest of a batch cut by round sharing, with its partition paused until it is applied. */
  private hold(consumer: Consumer, partition: number, rest: LogMessage[], logEnd: bigint): void {
    this.held.set(partition, { rest, logEnd });
    consumer.pause([{ topic: this.settings.topic, partitions: [partition] }]);
    this.logger.debug({ partition, messages: rest.length, msg: 'holding the rest of a backlog batch while a partition has live traffic' });
    this.drainHeld(consumer);
  }

  /**
   * Applies held rests one share at a time, partition after partition, beside the kafkajs workers
   * (which keep serving the partitions with live traffic); once no partition has live traffic, a
   * rest applies whole. A drained partition resumes from its offset of record.
   */
  private drainHeld(consumer: Consumer): void {
    if (this.draining) return;
    const placement = this.placement;
    const current = () => placement === this.placement && !this.stopping;
    const control: RetryControl = { shouldContinue: current };
    const drain = async () => {
      for (let next = this.held.entries().next(); !next.done && current(); next = this.held.entries().next()) {
        const [partition, { rest, logEnd }] = next.value;
        const share = this.sharing.isLive() ? rest.slice(0, this.settings.roundShareMessages) : rest;
        const outcome = await this.applyMessages(consumer, partition, share, logEnd, control);
        if (!current()) return;
        this.held.delete(partition);
        if (outcome !== undefined && share.length < rest.length) {
          this.held.set(partition, { rest: rest.slice(share.length), logEnd }); // to the end: partitions take turns
          continue;
        }
        if (this.blocked.has(partition)) continue;
        consumer.seek({ topic: this.settings.topic, partition, offset: String(this.nextOffsets.get(partition) ?? rest[0].offset) });
        consumer.resume([{ topic: this.settings.topic, partitions: [partition] }]);
      }
    };
    this.draining = drain()
      .catch((error: Error) => {
        // Partitions placed anew meanwhile (e.g. a Kafka commit refused for a partition given up):
        // nothing is lost, the offsets of record are in PostgreSQL.
        if (!current()) return;
        // as a crash inside kafkajs' eachBatch would be: start again from the offsets of record
        this.crashes.push(Date.now());
        this.logger.error({ err: error.message, msg: 'applying a held backlog failed; restarting the consumer' });
        this.held.clear();
        this.scheduleRestart();
      })
      .finally(() => {
        this.draining = undefined;
        // held while the loop was ending
        if (this.held.size > 0 && current()) this.drainHeld(consumer);
      });
  }

  /** Inside the batch transaction: if the DLQ cannot be written, the batch is retried. */
  private async publishDeadLetters(deadLetters: readonly DeadLetter[]): Promise<void> {
    failpoint('before-db-commit');
    if (deadLetters.length === 0) return;
    // One at a time: copies of large messages sent together would share one record batch over the limit.
    for (const d of deadLetters) {
      await this.producer!.send({ topic: dlqTopic(this.settings.topic), acks: -1, messages: [fitDeadLetter(d, this.maxMessageBytes)] });
    }
  }
}
