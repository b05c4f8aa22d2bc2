import { Inject } from '@nestjs/common';
import { Partitioners, type Admin, type PartitionMetadata } from 'kafkajs';
import { Command, CommandRunner, Option } from 'nest-commander';
import type { DataSource } from 'typeorm';
import { failpoint } from '../common/failpoint.js';
import { createProgress } from '../common/progress.js';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { openDatabase } from '../database/open-database.js';
import { EMBEDDED_PARTITION, eventLogBounds, readEventLog } from '../event-log/event-log.js';
import { EVENT_LOG_LISTENER } from '../ingestion/embedded/event-log.consumer.js';
import { createKafka, ensureTopics } from '../ingestion/kafka/kafka-client.js';
import { embeddedLogPosition } from '../ingestion/positions/embedded-origin.js';
import { LIVE_PROJECTION_LOCK } from '../database/advisory-locks.js';
import { messageSha1 } from '../events/log-batch.js';
import { openKafkaSink, type SinkMessage } from './event-sink.js';
import { messageAt, readMessagesAt } from './topic-messages.js';
import { refuseExtraArguments, UsageError } from './usage-error.js';

/** The idempotent producer retries without end (a broker away): a send not acknowledged by then fails the run, which a rerun continues. */
const SEND_TIMEOUT_MS = 60_000;

/** Rows read from the embedded log at a time. */
const READ_ROWS = 1000;

type MoveOptions = { batchSize?: number };

/** One embedded message as the topic must hold it. */
type Expected = { embeddedOffset: bigint; key: string | null; sha1: Buffer };

/** What the embedded log puts on one partition of the topic. */
type PartitionPlan = {
  partition: number;
  /** The topic's first offset at the start (its low watermark): where the copy begins. */
  base: bigint;
  /** Messages the topic held at the start. */
  held: bigint;
  /** Embedded messages placed on this partition. */
  count: bigint;
  first?: Expected;
  /** The one at index held - 1 (the topic's last when it holds a prefix of the copy). */
  atHeld?: Expected;
  last?: Expected;
  /** Embedded messages before the stored embedded offset: already projected. */
  projected: bigint;
  projectedSha1: Buffer | null;
  sent: bigint;
};

/** The stored positions of the topic name: the embedded log's (to switch), or already Kafka's. */
type StoredPositions = { origin: 'embedded'; next: bigint; sha1: Buffer | null; rows: number } | { origin: 'kafka' };

/**
 * Refused: one line (`error: ...`), exit 1, the stored offsets unchanged. The refusals that need no
 * look at the topic come before the run creates a missing topic (or its .dlq); the others come
 * before the first send (a topic this run created holds nothing they refuse); those at the switch
 * (appended to, or published to, during the move) leave the topic holding what was sent.
 */
class MoveRefused extends Error {}

/**
 * A message as the topic gets it, with the embedded log's timestamp (appended_at, epoch ms, as the
 * embedded consumer reads it): the consumer checks an event's `time` against its message's
 * timestamp (future_time), so Kafka must carry the same one for a rebuild to decide the same way.
 * openKafkaSink hands its messages to kafkajs as they are; a topic must keep producer timestamps
 * (message.timestamp.type CreateTime, Kafka's default).
 */
type CopiedMessage = SinkMessage & Required<Pick<SinkMessage, 'timestamp'>> & { embeddedOffset: bigint };

@Command({
  name: 'move-to-kafka',
  description:
    "Copy the embedded event log's events to the Kafka topic KAFKA_TOPIC (keyed as published, in order, each once; a rerun continues where a stopped one ended) " +
    "and switch the offsets stored with the read models from the embedded log's to the topic's, so the service started with KAFKA_BROKERS continues on Kafka. " +
    'Run it with no consumer running (docs/operations.md, "Moving from the embedded log to Kafka"). Exit 0: moved (or already moved); 1: refused or failed; 2: usage error.',
})
export class MoveToKafkaCommand extends CommandRunner {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    super();
  }

  async run(args: string[], options: MoveOptions): Promise<void> {
    refuseExtraArguments('move-to-kafka', args);
    if (!this.config.kafka) throw new MoveRefused('move-to-kafka needs KAFKA_BROKERS (and KAFKA_TOPIC): the Kafka the service is to use');
    const settings = this.config.kafka;
    const topic = settings.topic;
    const { db, close } = await openDatabase(this.config, 'move-to-kafka');
    const kafka = createKafka(settings, '-move-to-kafka');
    const admin = kafka.admin();
    try {
      await refuseLiveEmbeddedConsumer(db);
      const rebuilds = (await db.query(`SELECT id::text, kind FROM public.rebuilds WHERE status = 'running' ORDER BY id`)) as { id: string; kind: string }[];
      if (rebuilds.length > 0)
        throw new MoveRefused(
          `a ${rebuilds[0].kind} (#${rebuilds[0].id}) is running on the embedded log's positions: let it finish, or \`npm run cli -- rebuild --abort\`, then move`,
        );
      const { low: embeddedStart, high: embeddedEnd } = await eventLogBounds(db, topic);
      if (embeddedEnd === 0n) {
        process.stdout.write(`the embedded event log holds no events of topic ${topic}: nothing to move\n`);
        return;
      }
      if (embeddedStart > 0n)
        throw new MoveRefused(
          `the embedded event log of topic ${topic} no longer starts at offset 0 (it starts at ${embeddedStart}): its history cannot be copied whole`,
        );

      // Every refusal that needs no look at the topic's content comes before the first change (the topic created).
      await admin.connect();
      await refuseLiveKafkaConsumer(admin, settings.groupId, topic);
      if ((await ensureTopics(admin, topic)).includes(topic)) process.stdout.write(`created Kafka topic ${topic} with the broker's default partition count\n`);
      const [metadata] = (await admin.fetchTopicMetadata({ topics: [topic] })).topics;
      const partitionMetadata = [...metadata.partitions].sort((a, b) => a.partitionId - b.partitionId);
      const ends = new Map((await admin.fetchTopicOffsets(topic)).map((o) => [o.partition, { low: BigInt(o.low), high: BigInt(o.high) }]));
      const plans = new Map<number, PartitionPlan>(
        partitionMetadata.map(({ partitionId: partition }) => {
          const end = ends.get(partition) ?? { low: 0n, high: 0n };
          return [partition, { partition, base: end.low, held: end.high - end.low, count: 0n, projected: 0n, projectedSha1: null, sent: 0n }];
        }),
      );
      const stored = await storedPositions(db, topic, plans);
      const partitionOf = placement(topic, partitionMetadata);

      // What the copy puts where: counts, and the messages the topic's content is checked against.
      await walkEmbeddedLog(db, topic, embeddedEnd, partitionOf, plans, (plan, index, m) => {
        const expected = { embeddedOffset: m.offset, key: m.key, sha1: messageSha1(m.value) };
        if (index === 0n) plan.first = expected;
        if (index === plan.held - 1n) plan.atHeld = expected;
        plan.last = expected;
        if (stored.origin === 'embedded' && m.offset < stored.next) {
          plan.projected = index + 1n;
          plan.projectedSha1 = expected.sha1;
        }
      });
      const complete = [...plans.values()].every((p) => p.held >= p.count);
      await checkTopicHoldsPrefix(kafka, topic, plans, complete);

      const total = [...plans.values()].reduce((n, p) => n + p.count, 0n);
      const already = [...plans.values()].reduce((n, p) => n + (p.held < p.count ? p.held : p.count), 0n);
      process.stdout.write(
        `embedded event log of topic ${topic}: ${total} event(s); Kafka topic ${topic} (${plans.size} partition(s)) already holds ${already} of them` +
          (already > 0n && already < total ? ' (a copy stopped earlier: continuing it)' : '') +
          '\n',
      );
      if (!complete) await this.send(db, topic, embeddedEnd, partitionOf, plans, total, already, options.batchSize ?? READ_ROWS);
      await checkTopicHoldsCopy(admin, topic, plans);
      process.stdout.write(
        `sent ${[...plans.values()].reduce((n, p) => n + p.sent, 0n)} event(s); the topic holds all ${total} event(s) of the embedded log\n`,
      );

      if (stored.origin === 'kafka') {
        process.stdout.write(`the offsets stored with the read models are already the topic's: left as they are\n`);
        return;
      }
      await switchPositions(db, topic, embeddedEnd, stored, plans);
      const moved = [...plans.values()].map((p) => `partition ${p.partition} -> ${p.base + p.projected}`).join(', ');
      process.stdout.write(`switched the stored offsets from the embedded log's (next ${stored.next}) to the topic's: ${moved}\n`);
      process.stdout.write(
        `start the service with KAFKA_BROKERS set: it continues on Kafka and no longer reads the embedded log (what is appended to it from now on reaches no consumer)\n`,
      );
    } finally {
      await admin.disconnect().catch(() => undefined);
      await close();
    }
  }

  /** Sends, in embedded order, every message at or past what the topic held on its partition. */
  private async send(
    db: DataSource,
    topic: string,
    end: bigint,
    partitionOf: (key: string | null) => number,
    plans: Map<number, PartitionPlan>,
    total: bigint,
    already: bigint,
    batchSize: number,
  ): Promise<void> {
    // Idempotent: a produce retried after a lost answer is not written twice. A run killed between
    // a send and its answer leaves the topic holding it or not; the next run compares the topic
    // with the embedded log and continues after what it holds, so no progress is kept elsewhere.
    const sink = await openKafkaSink(this.config, { idempotent: true, clientIdSuffix: '-move-to-kafka' });
    const progress = createProgress({ label: 'move-to-kafka', unit: 'events' });
    let pending: CopiedMessage[] = [];
    let pendingBytes = 0;
    let done = already;
    const flush = async () => {
      if (pending.length === 0) return;
      const batch = pending;
      pending = [];
      pendingBytes = 0;
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          sink.send(batch.map(({ key, value, partition, timestamp }) => ({ key, value, partition, timestamp }))),
          new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error(`no acknowledgement from the broker in ${SEND_TIMEOUT_MS / 1000} s`)), SEND_TIMEOUT_MS);
          }),
        ]);
      } catch (error) {
        throw new Error(
          `sending embedded offsets ${batch[0].embeddedOffset}..${batch.at(-1)!.embeddedOffset} failed: ${(error as Error).message}; ` +
            'run the command again: it continues after what the topic holds',
        );
      } finally {
        clearTimeout(timer);
      }
      for (const m of batch) plans.get(m.partition!)!.sent++;
      done += BigInt(batch.length);
      progress.update({ done: Number(done), fraction: Number(done) / Number(total) });
      failpoint('move-to-kafka-after-send');
    };
    try {
      await walkEmbeddedLog(db, topic, end, partitionOf, plans, async (plan, index, m) => {
        if (index < plan.held) return;
        if (pending.length > 0 && (pendingBytes + m.value.length > sink.chunkBytes || pending.length >= batchSize)) await flush();
        pending.push({ key: m.key, value: m.value, partition: plan.partition, timestamp: m.timestamp, embeddedOffset: m.offset });
        pendingBytes += m.value.length;
      });
      await flush();
    } finally {
      progress.stop();
      await sink.close().catch(() => undefined);
    }
  }

  @Option({ flags: '--batch-size <n>', description: 'messages per produce request (default 1000)' })
  parseBatchSize(value: string): number {
    if (!/^[1-9]\d*$/.test(value)) throw new UsageError(`--batch-size must be a positive integer (got ${JSON.stringify(value)})`);
    return Number(value);
  }
}

/** The partition kafkajs' default partitioner picks for the key (as publish sends it); messages without a key go to partition 0. */
function placement(topic: string, partitionMetadata: PartitionMetadata[]): (key: string | null) => number {
  const partitioner = Partitioners.DefaultPartitioner();
  // Keyed: murmur2 of the key over the partition count, whatever the leaders. Unkeyed, the
  // partitioner would take turns, and a rerun could place a message elsewhere than the first run.
  return (key) => (key === null ? partitionMetadata[0].partitionId : partitioner({ topic, partitionMetadata, message: { key, value: null } }));
}

/** Every embedded message below `end`, in order, with its partition's plan and its index there. */
async function walkEmbeddedLog(
  db: DataSource,
  topic: string,
  end: bigint,
  partitionOf: (key: string | null) => number,
  plans: Map<number, PartitionPlan>,
  visit: (plan: PartitionPlan, index: bigint, m: { offset: bigint; key: string | null; value: Buffer; timestamp: string }) => void | Promise<void>,
): Promise<void> {
  const seen = new Map<number, bigint>();
  for (let from = 0n; from < end;) {
    const rows = await readEventLog(db, topic, EMBEDDED_PARTITION, String(from), Number(end - from < BigInt(READ_ROWS) ? end - from : BigInt(READ_ROWS)));
    if (rows.length === 0 || BigInt(rows[0].offset) !== from) throw new Error(`the embedded event log has no message at offset ${from} (below its end ${end})`);
    for (const row of rows) {
      const key = row.key === null ? null : Buffer.isBuffer(row.key) ? row.key.toString('utf8') : row.key;
      const plan = plans.get(partitionOf(key))!;
      const index = seen.get(plan.partition) ?? 0n;
      seen.set(plan.partition, index + 1n);
      await visit(plan, index, { offset: BigInt(row.offset), key, value: row.value ?? Buffer.alloc(0), timestamp: row.timestamp! });
    }
    from = BigInt(rows.at(-1)!.offset) + 1n;
  }
  for (const plan of plans.values()) plan.count = seen.get(plan.partition) ?? 0n;
}

/**
 * What the topic holds must be the start of this copy on every partition (an earlier run's), or
 * the whole copy followed by newer events (published to Kafka once the copy was complete).
 * Compared at both ends of what it holds of the copy: its messages are appended in order, one
 * request at a time, so anything else would differ there.
 */
async function checkTopicHoldsPrefix(
  kafka: ReturnType<typeof createKafka>,
  topic: string,
  plans: Map<number, PartitionPlan>,
  complete: boolean,
): Promise<void> {
  const wanted: { partition: number; offset: bigint; expected: Expected }[] = [];
  for (const p of plans.values()) {
    if (p.held === 0n || (p.count === 0n && complete)) continue;
    if (p.count === 0n || (p.held > p.count && !complete)) {
      throw new MoveRefused(
        `Kafka topic ${topic} already holds events that are not the embedded log's: partition ${p.partition} holds ${p.held}, the embedded log has ${p.count} for it; ` +
          'move into an empty topic (or another KAFKA_TOPIC)',
      );
    }
    const copied = p.held < p.count ? p.held : p.count;
    wanted.push({ partition: p.partition, offset: p.base, expected: p.first! });
    wanted.push({ partition: p.partition, offset: p.base + copied - 1n, expected: p.held <= p.count ? p.atHeld! : p.last! });
  }
  if (wanted.length === 0) return;
  const found = await readMessagesAt(kafka, topic, [...plans.keys()], wanted);
  for (const w of wanted) {
    const m = found.get(messageAt(w.partition, w.offset));
    const same =
      m !== undefined && messageSha1(m.value).equals(w.expected.sha1) && (m.key === null ? w.expected.key === null : m.key.toString('utf8') === w.expected.key);
    if (!same) {
      throw new MoveRefused(
        `Kafka topic ${topic} already holds events that are not the embedded log's: partition ${w.partition} offset ${w.offset} is not the embedded event at offset ${w.expected.embeddedOffset}; ` +
          'move into an empty topic (or another KAFKA_TOPIC)',
      );
    }
  }
}

/** After the sends: each partition holds exactly what it held plus what was sent (nothing doubled, nothing from elsewhere). */
async function checkTopicHoldsCopy(admin: Admin, topic: string, plans: Map<number, PartitionPlan>): Promise<void> {
  const ends = new Map((await admin.fetchTopicOffsets(topic)).map((o) => [o.partition, BigInt(o.high)]));
  for (const p of plans.values()) {
    const expected = p.base + p.held + p.sent;
    if (ends.get(p.partition) !== expected) {
      throw new MoveRefused(
        `partition ${p.partition} of Kafka topic ${topic} ends at ${ends.get(p.partition)}, expected ${expected}: something else published to the topic during the move; positions were not switched`,
      );
    }
  }
}

/**
 * Whose offsets the read models store under the topic's name (the embedded log and the topic
 * share it): the embedded log writes only partition 0, a switch writes every partition.
 */
async function storedPositions(db: DataSource, topic: string, plans: Map<number, PartitionPlan>): Promise<StoredPositions> {
  const rows = (await db.query(`SELECT partition, next_offset::text AS next_offset, last_message_sha1 FROM read_model.projection_offsets WHERE topic = $1`, [
    topic,
  ])) as {
    partition: number;
    next_offset: string;
    last_message_sha1: Buffer | null;
  }[];
  if (rows.some((r) => r.partition !== EMBEDDED_PARTITION)) return { origin: 'kafka' };
  const [row] = rows;
  if (!row) return { origin: 'embedded', next: 0n, sha1: null, rows: 0 };
  const next = BigInt(row.next_offset);
  const embedded = await embeddedLogPosition(db, topic, EMBEDDED_PARTITION, next, row.last_message_sha1);
  if (!embedded) return { origin: 'kafka' };
  if (next > 0n && row.last_message_sha1 === null && plans.size === 1 && plans.get(EMBEDDED_PARTITION)!.base !== 0n) {
    // Either log's position: with one partition starting elsewhere than 0 they differ, and no hash tells them apart.
    throw new MoveRefused(
      `the offset stored for partition 0 (${next}) may be the embedded log's or the topic's: check with \`npm run cli -- offsets show\` and set it with \`offsets reset\``,
    );
  }
  return { origin: 'embedded', next, sha1: row.last_message_sha1, rows: 1 };
}

/**
 * In one transaction, with no live batch in flight (the live-projection lock, exclusive) and no
 * append to the embedded log (its head row locked): each partition's next offset becomes where its
 * first not yet projected event lies in the topic, and its anchor the last projected one's hash,
 * which the Kafka consumer finds at the offset before on start.
 */
async function switchPositions(
  db: DataSource,
  topic: string,
  embeddedEnd: bigint,
  stored: Extract<StoredPositions, { origin: 'embedded' }>,
  plans: Map<number, PartitionPlan>,
): Promise<void> {
  await db.transaction(async (m) => {
    await m.query('SELECT pg_advisory_xact_lock($1)', [LIVE_PROJECTION_LOCK]);
    const [head] = (await m.query(`SELECT next_offset::text AS next_offset FROM public.event_log_heads WHERE topic = $1 AND partition = $2 FOR UPDATE`, [
      topic,
      EMBEDDED_PARTITION,
    ])) as { next_offset: string }[];
    if (BigInt(head.next_offset) !== embeddedEnd) {
      throw new MoveRefused(
        `${BigInt(head.next_offset) - embeddedEnd} event(s) were appended to the embedded log during the move (publish, store notifications, erasure requests): ` +
          'stop what appends and run the command again (it sends only those); positions were not switched',
      );
    }
    await refuseLiveEmbeddedConsumer(m);
    const rows = (await m.query(
      `SELECT partition, next_offset::text AS next_offset, last_message_sha1 FROM read_model.projection_offsets WHERE topic = $1 FOR UPDATE`,
      [topic],
    )) as {
      partition: number;
      next_offset: string;
      last_message_sha1: Buffer | null;
    }[];
    const unchanged =
      rows.length === stored.rows &&
      (rows.length === 0 ||
        (rows[0].next_offset === String(stored.next) && (rows[0].last_message_sha1 ?? Buffer.alloc(0)).equals(stored.sha1 ?? Buffer.alloc(0))));
    if (!unchanged) throw new MoveRefused('the stored offsets changed during the move (a consumer ran): stop it and run the command again');
    await m.query(`DELETE FROM read_model.projection_offsets WHERE topic = $1`, [topic]);
    const list = [...plans.values()];
    await m.query(
      `INSERT INTO read_model.projection_offsets (topic, partition, next_offset, last_message_sha1)
       SELECT $1, * FROM unnest($2::int[], $3::bigint[], $4::bytea[])`,
      [topic, list.map((p) => p.partition), list.map((p) => String(p.base + p.projected)), list.map((p) => p.projectedSha1)],
    );
  });
}

async function refuseLiveEmbeddedConsumer(db: Pick<DataSource, 'query'>): Promise<void> {
  const [{ n }] = (await db.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()`, [
    EVENT_LOG_LISTENER,
  ])) as { n: number }[];
  if (n > 0) {
    throw new MoveRefused(
      'the service is consuming the embedded event log of this database: stop it first (with the embedded PostgreSQL, start it again with CONSUMER_ENABLED=false for the move)',
    );
  }
}

/** A service consuming the topic already would project the copy as it arrives, from no stored offset. */
async function refuseLiveKafkaConsumer(admin: Admin, groupId: string, topic: string): Promise<void> {
  const { groups } = await admin.describeGroups([groupId]);
  const members = groups[0]?.members.length ?? 0;
  if (members > 0)
    throw new MoveRefused(
      `the service is consuming Kafka topic ${topic} (consumer group ${groupId} has ${members} member(s)): stop it, move, then start it again`,
    );
}
