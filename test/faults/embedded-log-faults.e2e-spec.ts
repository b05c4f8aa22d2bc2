import { appendToEventLog } from '../../src/event-log/event-log.js';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { expectEventually } from '../utils/expect-eventually.js';
import { runCli } from '../utils/processes.js';
import { expectEqualsFromScratch } from '../utils/read-models.js';
import { scenarioEvents, toBuffers } from '../utils/scenario.js';

// The embedded log follows the same position rules as Kafka: a log emptied or cut under the read
// models blocks the consumer instead of skipping, until `offsets reset`.

describe('embedded event log emptied under the read models (e2e, real PostgreSQL)', () => {
  let db: TestDatabase;
  let api: TestApp;
  const topic = 'elog-faults';

  beforeAll(async () => {
    db = await createTestDatabase('elogfault');
    api = await startTestApp({ databaseUrl: db.url, env: { CONSUMER_ENABLED: 'true', KAFKA_TOPIC: topic } });
  });
  afterAll(async () => {
    await api?.close();
    await db?.drop();
  });

  const stored = async () => (await db.dataSource.query(`SELECT next_offset::int AS n FROM read_model.projection_offsets WHERE topic = $1`, [topic]))[0]?.n;

  it('blocks with the offsets named, and resumes from the log start after `offsets reset --to earliest`', async () => {
    const first = toBuffers(scenarioEvents({ seed: 71, customers: 8, tag: 'el1' }));
    await appendToEventLog(
      db.dataSource,
      topic,
      first.map((value) => ({ key: null, value })),
    );
    await expectEventually(async () => expect(await stored()).toBe(first.length));

    // the operator recreated the log: its rows are gone and it starts again at 0
    await db.dataSource.query(`DELETE FROM public.event_log WHERE topic = $1`, [topic]);
    await db.dataSource.query(`UPDATE public.event_log_heads SET next_offset = 0 WHERE topic = $1`, [topic]);
    const second = toBuffers(scenarioEvents({ seed: 72, customers: 2, tag: 'el2' }));
    await appendToEventLog(
      db.dataSource,
      topic,
      second.map((value) => ({ key: null, value })),
    );

    await expectEventually(async () => {
      const res = await api.get('/health/ready');
      expect(res.status).toBe(503);
      expect(res.body.checks.details.consumer).toMatchObject({
        state: 'blocked',
        reason: expect.stringContaining(`stored offset ${first.length}, log 0..${second.length}`),
      });
    });
    expect(await stored()).toBe(first.length);

    const reset = await runCli(['offsets', 'reset', '--to', 'earliest', '--partition', '0'], { DATABASE_URL: db.url, KAFKA_TOPIC: topic });
    expect(reset.stdout).toContain(`partition 0: stored offset ${first.length} -> 0`);
    await expectEventually(async () => expect((await api.get('/health/ready')).status).toBe(200));
    await expectEventually(async () => expect(await stored()).toBe(second.length));
    await expectEqualsFromScratch(db.dataSource, [...first, ...second]);
  });
});
