import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown, Optional } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Partitioners, type Admin, type Consumer, type EachBatchPayload, type Kafka, type Producer } from 'kafkajs';
import { DataSource } from 'typeorm';
import { APP_CONFIG, type AppConfig, type KafkaSettings } from '../../config/app-config.js';
import type { ConsumerState, ConsumerStatus } from '../../health/consumer-status.js';
import { failpoint } from '../../common/failpoint.js';
import type { DeadLetter } from '../../projection/apply-batch.js';
import { LIVE_TARGET, PROJECTION_TARGET, type ProjectionTarget } from '../projection-target.js';
import { BatchAbandoned, Projector } from '../projector.js';
import { createKafka, dlqTopic } from './kafka-client.js';

/**
 * The live projection from Kafka. Offsets of record live in the read-model database, written in the
 * same transaction as the rows; on every assignment the consumer seeks there. Kafka's committed
 * offsets follow after each database commit, so lag tools work, but are never trusted.
 */
@Injectable()
export class KafkaProjectionConsumer implements OnApplicationBootstrap, OnApplicationShutdown, ConsumerStatus {
  private readonly logger = new Logger('kafka-consumer');
  private readonly settings: KafkaSettings;
  private kafka!: Kafka;
  private consumer?: Consumer;
  private producer?: Producer;
  private admin?: Admin;
  private status: ConsumerState = 'stopped';
  private stopping = false;
  private restartTimer?: NodeJS.Timeout;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    @InjectDataSource() private readonly db: DataSource,
    private readonly projector: Projector,
    @Optional() @Inject(PROJECTION_TARGET) private readonly target: ProjectionTarget = LIVE_TARGET,
  ) {
    this.settings = config.kafka!;
    this.topic = this.settings.topic;
  }

  readonly topic: string;

  async endOffsets(): Promise<Map<number, bigint>> {
    if (!this.admin) throw new Error('Kafka admin client not connected');
    const offsets = await this.admin.fetchTopicOffsets(this.topic);
    return new Map(offsets.map((o) => [o.partition, BigInt(o.high)]));
  }

  state(): ConsumerState {
    return this.status === 'running' && this.projector.isRetrying ? 'retrying' : this.status;
  }

  onApplicationBootstrap(): void {
    // In the background: the HTTP API serves the current read models even while Kafka is away.
    void this.start();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    // disconnect() waits for the batch in flight to finish and commit.
    await this.consumer?.disconnect().catch(() => undefined);
    await this.producer?.disconnect().catch(() => undefined);
    await this.admin?.disconnect().catch(() => undefined);
    this.status = 'stopped';
  }

  async start(): Promise<void> {
    if (this.stopping) return;
    this.status = 'starting';
    try {
      this.kafka = createKafka(this.settings);
      this.admin = this.kafka.admin();
      await this.admin.connect();
      await this.ensureTopics(this.admin);
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
        retry: { retries: 8 },
      });
      this.consumer = consumer;
      consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => void this.seekToStoredOffsets(consumer, payload.memberAssignment));
      consumer.on(consumer.events.CRASH, ({ payload }) => {
        this.logger.error({ err: payload.error?.message, restart: payload.restart, msg: 'consumer crashed' });
        if (!payload.restart) this.scheduleRestart();
      });
      await consumer.connect();
      await consumer.subscribe({ topic: this.settings.topic, fromBeginning: true });
      await consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        // While one partition's batch waits on PostgreSQL, another's is fetched and decoded.
        partitionsConsumedConcurrently: this.settings.partitionsConcurrency,
        eachBatch: (payload) => this.onBatch(consumer, payload),
      });
      this.status = 'running';
      this.logger.log({ topic: this.settings.topic, groupId: this.target.groupId ?? this.settings.groupId, schema: this.target.schema, msg: 'consuming' });
    } catch (error) {
      this.logger.error({ err: (error as Error).message, msg: 'could not start the Kafka consumer; retrying' });
      this.scheduleRestart();
    }
  }

  private scheduleRestart(): void {
    if (this.stopping) return;
    this.status = 'stopped';
    clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(async () => {
      await this.consumer?.disconnect().catch(() => undefined);
      await this.producer?.disconnect().catch(() => undefined);
      await this.admin?.disconnect().catch(() => undefined);
      void this.start();
    }, 2_000);
  }

  private async ensureTopics(admin: Admin): Promise<void> {
    const existing = new Set(await admin.listTopics());
    const wanted = [this.settings.topic, dlqTopic(this.settings.topic)].filter((t) => !existing.has(t));
    if (wanted.length === 0) return;
    await admin.createTopics({ topics: wanted.map((topic) => ({ topic })), waitForLeaders: true }).catch((error: Error) => {
      this.logger.warn({ err: error.message, topics: wanted, msg: 'could not create topics; expecting them to exist' });
    });
  }

  private async seekToStoredOffsets(consumer: Consumer, assignment: Record<string, number[]>): Promise<void> {
    const partitions = assignment[this.settings.topic] ?? [];
    if (partitions.length === 0) return;
    const rows: { partition: number; next_offset: string }[] = await this.db.query(
      `SELECT partition, next_offset::text AS next_offset FROM ${this.target.schema}.projection_offsets WHERE topic = $1 AND partition = ANY($2::int[])`,
      [this.settings.topic, partitions],
    );
    const stored = new Map(rows.map((r) => [r.partition, r.next_offset]));
    const low = await this.logStartOffsets();
    for (const partition of partitions) {
      const offset = stored.get(partition) ?? low.get(partition) ?? '0';
      consumer.seek({ topic: this.settings.topic, partition, offset });
    }
    this.logger.log({ partitions, offsets: Object.fromEntries(partitions.map((p) => [p, stored.get(p) ?? 'start'])), msg: 'assigned; resuming from stored offsets' });
  }

  private async logStartOffsets(): Promise<Map<number, string>> {
    const offsets = await this.admin!.fetchTopicOffsets(this.settings.topic);
    return new Map(offsets.map((o) => [o.partition, o.low]));
  }

  private async onBatch(consumer: Consumer, { batch, heartbeat, isRunning, isStale, resolveOffset }: EachBatchPayload): Promise<void> {
    if (batch.messages.length === 0 || !isRunning() || isStale()) return;
    const bound = this.target.bounds?.get(batch.partition);
    const within = bound === undefined ? batch.messages : batch.messages.filter((m) => BigInt(m.offset) < bound);
    if (within.length === 0) {
      // At the bound: fetch again from there later, when the bound may have moved.
      consumer.seek({ topic: batch.topic, partition: batch.partition, offset: String(bound) });
      await new Promise((r) => setTimeout(r, 200));
      return;
    }
    const messages = within.map((m) => ({ offset: m.offset, key: m.key?.toString('utf8') ?? null, value: m.value }));
    const control = { shouldContinue: () => isRunning() && !isStale() && !this.stopping, heartbeat };
    const schema = this.target.schema;
    let outcome;
    try {
      outcome = await this.projector.apply({ topic: batch.topic, partition: batch.partition, messages }, control, {
        schema,
        beforeCommit: (deadLetters) => this.publishDeadLetters(deadLetters),
      });
      failpoint('after-db-commit');
      if (outcome.kind === 'gap') {
        // Retention removed events below the stored offset: nothing earlier exists to project.
        const low = (await this.logStartOffsets()).get(batch.partition);
        if (low !== undefined && BigInt(low) > BigInt(outcome.storedOffset) && BigInt(messages[0].offset) <= BigInt(low)) {
          this.logger.warn({ partition: batch.partition, storedOffset: outcome.storedOffset, logStart: low, msg: 'events below the log start were deleted by retention; continuing from the log start' });
          outcome = await this.projector.apply({ topic: batch.topic, partition: batch.partition, messages }, control, {
            schema,
            logStartOffset: low,
            beforeCommit: (deadLetters) => this.publishDeadLetters(deadLetters),
          });
        }
      }
    } catch (error) {
      if (error instanceof BatchAbandoned) return;
      throw error;
    }
    if (outcome.kind === 'gap') {
      consumer.seek({ topic: batch.topic, partition: batch.partition, offset: outcome.storedOffset });
      return;
    }
    resolveOffset(messages[messages.length - 1].offset);
    await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: outcome.nextOffset }]);
    if (within.length < batch.messages.length) consumer.seek({ topic: batch.topic, partition: batch.partition, offset: outcome.nextOffset });
    await heartbeat();
  }

  /** Inside the batch transaction: if the DLQ cannot be written, the batch is retried. */
  private async publishDeadLetters(deadLetters: readonly DeadLetter[]): Promise<void> {
    failpoint('before-db-commit');
    if (deadLetters.length === 0) return;
    await this.producer!.send({
      topic: dlqTopic(this.settings.topic),
      acks: -1,
      messages: deadLetters.map((d) => ({
        key: d.key,
        value: d.value,
        headers: {
          'dlq-reason-code': d.code,
          'dlq-reason': d.reason,
          'dlq-source-topic': d.topic,
          'dlq-source-partition': String(d.partition),
          'dlq-source-offset': d.offset,
        },
      })),
    });
  }
}
