import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { loadConfig } from '../../src/config/app-config.js';
import { dataSourceOptions } from '../../src/database/data-source-options.js';
import { applyBatch } from '../../src/projection/apply-batch.js';
import { type Batch, type LogMessage } from '../../src/events/log-batch.js';
import { APP_LOCK_BUCKETS, RECEIPT_LOCK_BUCKETS } from '../../src/projection/apply-batch.sql.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { txEvent } from '../utils/events.js';
import { countRows } from '../utils/read-models.js';

// Stores send notifications in time order: in any few thousand consecutive events nearly every one
// is another customer's receipt. The consumer applies a whole fetch (KAFKA_MAX_BYTES_PER_PARTITION)
// of a partition in one transaction, several partitions at once, on a PostgreSQL with the default
// lock table (max_locks_per_transaction = 64, shared by every session of the server).

const PARTITIONS = 4;
/** One round of full fetches per unit of ABUSE_SCALE (`npm run test:abuse`: 20); ~4-5 s each here. */
const ROUNDS = Number(process.env.ABUSE_SCALE ?? 1);
const DAY = 86_400_000;

/** Kafka's default partitioner keys by receipt; any stable hash spreads receipts the same way. */
const partitionOf = (receiptId: string) => [...receiptId].reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 7) % PARTITIONS;

/**
 * A store's stream: each customer buys a monthly subscription at some moment of the day, a quarter
 * turn auto-renew off in the days after; every customer's events interleaved with everyone else's by
 * time, with random UUID ids as the stores' notification ids are.
 */
function timeOrderedStream(customers: number, from: number): { receiptId: string; value: Buffer }[] {
  const events: { time: number; receiptId: string; event: Record<string, unknown> }[] = [];
  for (let c = 0; c < customers; c++) {
    const platform = c % 3 === 0 ? 'google' : 'apple';
    const receiptId = `${platform}:r-lock-${c}`;
    const bought = from + Math.floor(Math.random() * DAY);
    const data = {
      transactionId: `${platform}:t-lock-${c}`,
      purchaseId: `${platform}:p-lock-${c}`,
      productId: `${platform}:pro_monthly`,
      receiptId,
      applicationUsername: `user-lock-${c}`,
      purchaseDate: new Date(bought).toISOString(),
      expirationDate: new Date(bought + 30 * DAY).toISOString(),
      renewalIntent: 'Renew',
      amountMicros: 9_990_000,
      currency: 'USD',
    };
    events.push({ time: bought, receiptId, event: txEvent({ id: randomUUID(), time: new Date(bought + 1000).toISOString(), data }) });
    if (c % 4 === 0) {
      const off = bought + DAY + Math.floor(Math.random() * 2 * DAY);
      events.push({ time: off, receiptId, event: txEvent({ id: randomUUID(), time: new Date(off).toISOString(), data: { ...data, renewalIntent: 'Lapse' } }) });
    }
  }
  events.sort((a, b) => a.time - b.time);
  return events.map((e) => ({ receiptId: e.receiptId, value: Buffer.from(JSON.stringify(e.event)) }));
}

/** Each partition's first `rounds` fetches: messages up to the consumer's byte limit, in offset order. */
function fetches(stream: { receiptId: string; value: Buffer }[], maxBytes: number, rounds: number): Batch[][] {
  const partitions = Array.from({ length: PARTITIONS }, (_, partition) => ({ partition, messages: [] as LogMessage[] }));
  for (const { receiptId, value } of stream) {
    const p = partitions[partitionOf(receiptId)];
    p.messages.push({ offset: String(p.messages.length), key: Buffer.from(receiptId), value });
  }
  return partitions.map(({ partition, messages }) => {
    const batches: Batch[] = [];
    let at = 0;
    while (batches.length < rounds && at < messages.length) {
      let bytes = 0;
      let end = at;
      while (end < messages.length && bytes + messages[end].value!.length <= maxBytes) bytes += messages[end++].value!.length;
      batches.push({ topic: 'purchase-events', partition, messages: messages.slice(at, end) });
      at = end;
    }
    return batches;
  });
}

describe('locks per batch (integration, real PostgreSQL with its default lock table)', () => {
  let db: TestDatabase;
  let pool: DataSource;

  beforeAll(async () => {
    db = await createTestDatabase('lockbound');
    // a connection per partition, as the consumer's concurrent partitions each hold their own
    pool = await new DataSource(dataSourceOptions(db.url, { poolSize: PARTITIONS, applicationName: 'lock-bound' })).initialize();
  });
  afterAll(async () => {
    await pool?.destroy();
    await db?.drop();
  });

  it(
    'full fetches of time-ordered events, one receipt per event, on several partitions at once: every batch applies within the default lock allowance',
    async () => {
      // PostgreSQL's default; a server configured with more would hide the overflow
      expect((await pool.query('SHOW max_locks_per_transaction'))[0].max_locks_per_transaction).toBe('64');
      const maxBytes = loadConfig({ KAFKA_BROKERS: '127.0.0.1:9092' }).kafka!.maxBytesPerPartition;
      const perPartition = fetches(timeOrderedStream(10_000 * PARTITIONS * ROUNDS, Date.UTC(2026, 10, 20)), maxBytes, ROUNDS);
      // the premise: thousands of events per fetch, nearly every one another receipt
      for (const batch of perPartition.flat()) {
        expect(batch.messages.length).toBeGreaterThan(5_000);
        expect(new Set(batch.messages.map((m) => String(m.key))).size).toBeGreaterThan(0.95 * batch.messages.length);
      }

      // Just before each commit, while that batch holds every lock it took: its advisory locks.
      let mostAdvisory = 0;
      const beforeCommit = async () => {
        const rows: { n: number }[] = await db.dataSource.query(
          `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
         WHERE l.locktype = 'advisory' AND a.application_name = 'lock-bound' GROUP BY l.pid`,
        );
        mostAdvisory = Math.max(mostAdvisory, ...rows.map((r) => r.n));
      };
      for (let round = 0; round < ROUNDS; round++) {
        const outcomes = await Promise.all(perPartition.map((batches) => applyBatch(pool, batches[round], { beforeCommit })));
        expect(outcomes.map((o) => o.kind)).toEqual(perPartition.map(() => 'applied'));
      }

      const all = perPartition.flat().flatMap((b) => b.messages);
      const receipts = new Set(all.map((m) => String(m.key))).size;
      expect(await countRows(pool, 'read_model.transactions')).toBe(receipts);
      expect(await countRows(pool, 'read_model.customers')).toBe(receipts);
      // every message applied: offsets are dense from 0 in each partition
      const [{ n }] = await pool.query(`SELECT sum(next_offset)::int AS n FROM read_model.projection_offsets WHERE topic = 'purchase-events'`);
      expect(n).toBe(all.length);
      // the receipt buckets, the application buckets and the live-projection lock
      expect(mostAdvisory).toBeGreaterThan(0);
      expect(mostAdvisory).toBeLessThanOrEqual(RECEIPT_LOCK_BUCKETS + APP_LOCK_BUCKETS + 1);
      expect(RECEIPT_LOCK_BUCKETS + APP_LOCK_BUCKETS + 1).toBe(73); // the bound docs/security.md states
    },
    Math.max(60_000, ROUNDS * 15_000),
  );
});
