import { jest } from '@jest/globals';
import { chmodSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../../src/database/data-source-options.js';
import { startEmbeddedPostgres } from '../../src/database/embedded-postgres.js';
import { appendToEventLog } from '../../src/event-log/event-log.js';
import { freePort, freePorts } from '../kafka/broker.mjs';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { expectEventually } from '../utils/expect-eventually.js';
import { createTopic, kafkaBrokers, produce, uniqueTopic, waitUntilCaughtUp } from '../utils/kafka.js';
import { startService, type ServiceProcess } from '../utils/processes.js';
import { expectEqualsFromScratch } from '../utils/read-models.js';
import { scenarioEvents, toBuffers, prng } from '../utils/scenario.js';

// Crashes at random moments while events keep arriving: after CHAOS_KILLS SIGKILLs of the service
// (5 in `npm test`, 20 with `npm run test:chaos`) and a PostgreSQL restart mid-ingest, the read
// models equal a from-scratch projection of everything published: nothing lost, nothing doubled.

const KILLS = Number(process.env.CHAOS_KILLS ?? 5);
jest.setTimeout(120_000 + KILLS * 20_000);

type Mode = 'kafka' | 'embedded log';

describe.each(['kafka', 'embedded log'] as Mode[])('chaos (e2e, %s, separate service process)', (mode) => {
  let db: TestDatabase;
  let topic: string;
  let service: ServiceProcess | undefined;
  let port: number;

  beforeEach(async () => {
    db = await createTestDatabase('chaos');
    topic = uniqueTopic('chaos');
    if (mode === 'kafka') await createTopic(topic, 3);
    port = await freePort();
  });
  afterEach(async () => {
    await service?.kill('SIGKILL');
    service = undefined;
    await db?.drop();
  });

  const env = () => ({
    PORT: String(port),
    DATABASE_URL: db.url,
    KAFKA_TOPIC: topic,
    PROJECTION_BATCH_SIZE: '40',
    ...(mode === 'kafka'
      ? { KAFKA_BROKERS: kafkaBrokers(), KAFKA_GROUP_ID: `g-${topic}`, KAFKA_SESSION_TIMEOUT_MS: '6000', KAFKA_MAX_BYTES_PER_PARTITION: '8192' }
      : {}),
  });
  const publish = async (values: Buffer[]) => {
    if (mode === 'kafka') await produce(topic, values);
    else
      await appendToEventLog(
        db.dataSource,
        topic,
        values.map((value) => ({ key: null, value })),
      );
  };
  const caughtUp = async () => {
    if (mode === 'kafka') return waitUntilCaughtUp(db.dataSource, topic, 120_000);
    const [{ end }] = await db.dataSource.query(`SELECT coalesce(max(next_offset), 0)::text AS end FROM public.event_log_heads WHERE topic = $1`, [topic]);
    await expectEventually(async () => {
      const [row] = await db.dataSource.query(`SELECT next_offset::text AS n FROM read_model.projection_offsets WHERE topic = $1`, [topic]);
      expect(row?.n).toBe(end);
    }, 120_000);
  };

  it(`${KILLS} SIGKILLs while a producer publishes: the read models equal a from-scratch projection`, async () => {
    const all = toBuffers(scenarioEvents({ seed: 90 + (mode === 'kafka' ? 1 : 2), customers: 60 * KILLS, tag: `c${mode === 'kafka' ? 'k' : 'e'}` }));
    const rnd = prng(7);
    let published = 0;
    const producer = (async () => {
      while (published < all.length) {
        const chunk = all.slice(published, published + 25);
        await publish(chunk);
        published += chunk.length;
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    for (let kill = 0; kill < KILLS; kill++) {
      service = startService(env());
      await new Promise((r) => setTimeout(r, 1_500 + rnd() * 2_500));
      await service.kill('SIGKILL');
    }
    await producer;
    service = startService(env());
    await caughtUp();
    await expectEqualsFromScratch(db.dataSource, all);
  });
});

describe('chaos: PostgreSQL restarted mid-ingest (e2e, Kafka, own PostgreSQL)', () => {
  it('the projection retries, resumes after the restart, and loses nothing', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'sr-chaos-pg-'));
    chmodSync(dir, 0o755);
    const [pgPort, port] = await freePorts(2);
    let server = await startEmbeddedPostgres(dir, pgPort);
    const topic = uniqueTopic('chaos-pg');
    await createTopic(topic, 3);
    const service = startService({
      PORT: String(port),
      DATABASE_URL: server.url,
      KAFKA_BROKERS: kafkaBrokers(),
      KAFKA_TOPIC: topic,
      KAFKA_GROUP_ID: `g-${topic}`,
      PROJECTION_BATCH_SIZE: '40',
      KAFKA_MAX_BYTES_PER_PARTITION: '8192',
    });
    let db: DataSource | undefined;
    try {
      await expectEventually(async () => expect((await fetch(`http://127.0.0.1:${port}/health/ready`)).status).toBe(200), 60_000, 250);
      const all = toBuffers(scenarioEvents({ seed: 95, customers: 300, tag: 'cpg' }));
      await produce(topic, all.slice(0, 600));
      await new Promise((r) => setTimeout(r, 500));
      await server.stop();
      await produce(topic, all.slice(600));
      await new Promise((r) => setTimeout(r, 3_000));
      server = await startEmbeddedPostgres(dir, pgPort);
      db = await new DataSource(dataSourceOptions(server.url, { poolSize: 2 })).initialize();
      await waitUntilCaughtUp(db, topic, 120_000);
      await expectEqualsFromScratch(db, all);
      expect(service.output()).toContain('batch failed, will retry');
    } finally {
      await db?.destroy();
      await service.kill('SIGTERM');
      await server.stop();
    }
  });
});
