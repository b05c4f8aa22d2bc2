import { jest } from '@jest/globals';
import { spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Partitioners } from 'kafkajs';
import { appendToEventLog } from '../../src/event-log/event-log.js';
import { freePort } from '../kafka/broker.mjs';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { txEvent } from '../utils/events.js';
import { expectEventually } from '../utils/expect-eventually.js';
import { kafkaBrokers, readAll, testKafka, uniqueTopic, waitUntilCaughtUp } from '../utils/kafka.js';
import { deployedNodeFlags } from '../utils/deployed-flags.js';
import { serviceEnv, startService, type ServiceProcess } from '../utils/processes.js';

jest.setTimeout(300_000);

// Events too large for the log's limit (EVENT_MAX_BYTES, default the broker's message.max.bytes,
// 1048588 bytes): `publish` refuses them by line number in every mode and streams its input in
// bounded memory; a consumer dead-letters (too_large) a message over the limit, whoever wrote it,
// without loading it whole, and goes on. ABUSE_SCALE multiplies the size of the publish file and of
// the row written straight into the embedded log (the long form: ABUSE_SCALE=4 runs ~800 one-MB
// events and a 400 MB row, the largest it writes; see docs/operations.md, "Oversized events").
const SCALE = Number(process.env.ABUSE_SCALE ?? 1);
const MAX = 1_048_588;
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** A valid transaction.updated event of about `bytes` bytes (the padding is an extra data field the schema allows). */
const paddedEvent = (app: string, n: number, bytes: number) => {
  const event = txEvent({ app, id: `${app}-${n}`, time: '2024-01-01T00:00:00Z', data: { transactionId: `apple:${app}-${n}` } });
  const text = JSON.stringify(event);
  return bytes <= text.length ? text : text.slice(0, -2) + `,"padding":"${'x'.repeat(bytes - text.length - 13)}"}}`;
};

/**
 * The built CLI as `npm run cli` runs it (the service's heap flags), reporting its peak RSS
 * (process.resourceUsage().maxRSS, kB) through a preloaded module.
 */
function publishWithPeakRss(file: string, env: Record<string, string>): Promise<{ code: number | null; stderr: string; maxRssMb: number }> {
  return new Promise((resolve, reject) => {
    const node = [...deployedNodeFlags(), '--import', path.join(root, 'test/utils/report-max-rss.mjs')];
    const child = spawn(process.execPath, [...node, path.join(root, 'dist/cli.js'), 'publish', file], {
      env: serviceEnv(env),
      cwd: root,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => {
      const kb = /^max-rss-kb (\d+)$/m.exec(stderr);
      resolve({ code, stderr, maxRssMb: kb ? Number(kb[1]) / 1024 : NaN });
    });
  });
}

describe('oversized events on the embedded log (e2e: the built CLI and service, real PostgreSQL)', () => {
  let db: TestDatabase;
  let dir: string;

  beforeAll(async () => {
    db = await createTestDatabase('oversized');
    dir = mkdtempSync(path.join(tmpdir(), 'sr-oversized-'));
  });
  afterAll(async () => {
    await db?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('publish streams a file of hundreds of ~1 MB events in bounded memory, sends every valid line and names every other', async () => {
    const topic = 'oversized-publish';
    const valid = Math.round(120 * SCALE);
    const file = path.join(dir, 'big.ndjson');
    const out = createWriteStream(file);
    const write = async (line: string) => {
      if (!out.write(line + '\n')) await once(out, 'drain');
    };
    const bad = new Map<number, RegExp>();
    const sentIds: string[] = [];
    let lineNo = 0;
    for (let n = 0; n < valid; n++) {
      // every 25th line: not JSON, an unknown type, a valid event just over the limit, a 40 MB one
      if (n > 0 && n % 25 === 0) {
        const kind = (n / 25) % 4;
        lineNo++;
        if (kind === 1) {
          bad.set(lineNo, /refused \(not_json\)/);
          await write('{"truncated": ' + 'x'.repeat(900_000));
        } else if (kind === 2) {
          bad.set(lineNo, /refused \(unknown_type\)/);
          await write(JSON.stringify({ type: 'nope', pad: 'y'.repeat(500_000) }));
        } else if (kind === 3) {
          bad.set(lineNo, new RegExp(`refused \\(too_large\\): ${MAX + 1000} bytes; the event log takes messages up to ${MAX} bytes`));
          await write(paddedEvent('big', n, MAX + 1000));
        } else {
          bad.set(lineNo, /refused \(too_large\)/);
          for (let i = 0; i < 40; i++) out.write(i === 0 ? paddedEvent('huge', n, 1_000_000).slice(0, -3) : 'z'.repeat(1_000_000));
          await write('"}}');
        }
      }
      lineNo++;
      sentIds.push(`ok-${n}`);
      await write(paddedEvent('ok', n, 1_000_000));
    }
    out.end();
    await once(out, 'finish');

    const started = Date.now();
    const result = await publishWithPeakRss(file, { DATABASE_URL: db.url, KAFKA_TOPIC: topic });
    const seconds = (Date.now() - started) / 1000;

    for (const [line, reason] of bad) expect(result.stderr).toMatch(new RegExp(`^line ${line}: ${reason.source}`, 'm'));
    expect(result.stderr.match(/^line \d+:/gm)).toHaveLength(bad.size);
    expect(result.stderr).toContain(`published ${valid} event(s) to embedded event log (${topic}); refused ${bad.size} line(s)`);
    expect(result.code).toBe(1); // README: refused lines make the exit status 1
    const rows: { id: string }[] = await db.dataSource.query(
      `SELECT substring(convert_from(substring(value FROM 1 FOR 100), 'UTF8') FROM '"id":"([^"]+)"') AS id FROM public.event_log WHERE topic = $1 ORDER BY "offset"`,
      [topic],
    );
    expect(rows.map((r) => r.id)).toEqual(sentIds);
    // the file is ~160 MB (x SCALE): the CLI holds a few chunks of it, never the file or a 40 MB line
    // (publishing an empty file it peaks at ~150 MB; before streaming, this file took ~1 GB)
    expect(result.maxRssMb).toBeLessThan(224);
    console.log(`publish: ${valid} ~1 MB events and ${bad.size} refused lines in ${seconds.toFixed(1)} s, peak RSS ${result.maxRssMb.toFixed(0)} MB`);
  });

  describe('a row over the limit written straight into event_log', () => {
    const topic = 'oversized-consume';
    let service: ServiceProcess;
    let port: number;
    const good = (n: number) => Buffer.from(paddedEvent('consume', n, 600));

    beforeAll(async () => {
      port = await freePort();
      // the service as deployed: the Dockerfile's heap flags
      service = startService({ DATABASE_URL: db.url, PORT: String(port), KAFKA_TOPIC: topic, NODE_OPTIONS: deployedNodeFlags().join(' ') });
    });
    afterAll(async () => {
      await service?.kill('SIGTERM');
    });

    it('is dead-lettered too_large without being loaded, and ingestion goes on', async () => {
      await appendToEventLog(
        db.dataSource,
        topic,
        [0, 1].map((n) => ({ key: null, value: good(n) })),
      );
      // ~100 MB (x SCALE) of valid JSON made inside PostgreSQL, at the next offset, as any SQL client
      // could; at most 400 MB: PostgreSQL holds no value over 1 GB, and builds this one twice in memory.
      const megabytes = Math.min(400, Math.round(100 * SCALE));
      await db.dataSource.transaction(async (m) => {
        const [{ next }] = await m.query(
          `WITH h AS (UPDATE public.event_log_heads SET next_offset = next_offset + 1 WHERE topic = $1 AND partition = 0 RETURNING next_offset - 1 AS next) SELECT next FROM h`,
          [topic],
        );
        await m.query(
          `INSERT INTO public.event_log (topic, partition, "offset", key, value)
           VALUES ($1, 0, $2, 'apple:r-huge', convert_to(replace($3, '@PAD@', repeat('abcdefghijklmnopqrstuvwxyz0123456789', $4)), 'UTF8'))`,
          [topic, next, paddedEvent('consume', 99, 1000).replace(/x+/, '@PAD@'), Math.ceil((megabytes * 1024 * 1024) / 36)],
        );
      });
      await appendToEventLog(
        db.dataSource,
        topic,
        [2, 3, 4].map((n) => ({ key: null, value: good(n) })),
      );

      await expectEventually(
        async () => {
          const [row] = await db.dataSource.query(`SELECT next_offset::int AS n FROM read_model.projection_offsets WHERE topic = $1`, [topic]);
          expect({ stored: row?.n, exited: service.child.exitCode }).toEqual({ stored: 6, exited: null });
        },
        60_000,
        200,
      );
      const dead = await db.dataSource.query(
        `SELECT "offset"::int AS offset, code, reason, length(value) AS kept, convert_from(key, 'UTF8') AS key FROM public.dead_letters WHERE topic = $1`,
        [topic],
      );
      expect(dead).toEqual([
        {
          offset: 2,
          code: 'too_large',
          key: 'apple:r-huge',
          kept: MAX,
          reason: expect.stringMatching(new RegExp(`^\\d{9,} bytes; at most ${MAX} \\(EVENT_MAX_BYTES\\)`)),
        },
      ]);
      const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM read_model.transactions WHERE app_id = 'consume'`);
      expect(n).toBe(5);
      const ready = await fetch(`http://127.0.0.1:${port}/health/ready`);
      expect(ready.status).toBe(200);
      expect(service.output()).toMatch(/"code":"too_large"/);
    });
  });
});

describe('a message over the limit on Kafka, the broker allowing it (e2e, real broker and PostgreSQL)', () => {
  let db: TestDatabase;
  let api: TestApp;
  const topic = uniqueTopic('oversized');

  beforeAll(async () => {
    db = await createTestDatabase('oversizedk');
    const admin = testKafka().admin();
    await admin.connect();
    try {
      const allow = [{ name: 'max.message.bytes', value: String(8 * 1024 * 1024) }];
      await admin.createTopics({
        topics: [
          { topic, numPartitions: 1, configEntries: allow },
          { topic: `${topic}.dlq`, numPartitions: 1 },
        ],
        waitForLeaders: true,
      });
    } finally {
      await admin.disconnect();
    }
    api = await startTestApp({
      databaseUrl: db.url,
      env: { CONSUMER_ENABLED: 'true', KAFKA_BROKERS: kafkaBrokers(), KAFKA_TOPIC: topic, KAFKA_GROUP_ID: `g-${topic}` },
    });
  });
  afterAll(async () => {
    await api?.close();
    await db?.drop();
  });

  it('is dead-lettered too_large (its .dlq copy truncated) and the partition goes on', async () => {
    const producer = testKafka().producer({ createPartitioner: Partitioners.DefaultPartitioner });
    await producer.connect();
    const big = Buffer.from(paddedEvent('kbig', 2, 3 * 1024 * 1024));
    for (const value of [Buffer.from(paddedEvent('kbig', 1, 600)), big, Buffer.from(paddedEvent('kbig', 3, 600))]) {
      await producer.send({ topic, acks: -1, messages: [{ key: 'k', value }] });
    }
    await producer.disconnect();

    await waitUntilCaughtUp(db.dataSource, topic, 90_000);
    const dead = await db.dataSource.query(`SELECT "offset"::int AS offset, code, length(value) AS kept, reason FROM public.dead_letters WHERE topic = $1`, [
      topic,
    ]);
    expect(dead).toEqual([
      { offset: 1, code: 'too_large', kept: MAX, reason: expect.stringContaining(`${big.length + 1} bytes; at most ${MAX} (EVENT_MAX_BYTES)`) },
    ]);
    expect((await api.get('/v2/transactions', api.token('kbig'))).body.paging.total).toBe(2);
    const [copy] = await readAll(`${topic}.dlq`, 1);
    expect(copy.headers).toMatchObject({ 'dlq-reason-code': 'too_large', 'dlq-truncated': 'true', 'dlq-original-bytes': String(big.length) });
    expect(copy.value!.length).toBeLessThan(MAX);
  });
});
