import { appendToEventLog } from '../../src/event-log/event-log.js';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { expectEventually } from '../utils/expect-eventually.js';
import { txEvent } from '../utils/events.js';
import { countRows } from '../utils/read-models.js';

const TOPIC = 'purchase-events';

describe('a projection failure retrying cannot cure is reported (e2e: event log -> consumer -> /health/ready, /metrics)', () => {
  let db: TestDatabase;
  let api: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase('stuck_e2e');
    api = await startTestApp({ databaseUrl: db.url, env: { CONSUMER_ENABLED: 'true' } });
  });
  afterAll(async () => {
    await api?.close();
    await db?.drop();
  });

  it('readiness says which partition is stuck and why, the metrics carry its SQLSTATE; both clear once the operator fixes it', async () => {
    await expectEventually(async () => expect((await api.get('/health/ready')).status).toBe(200));
    // stands in for a database the projection can no longer write as it expects (a privilege, a
    // table moved away): PostgreSQL refuses every attempt the same way
    await db.dataSource.query(`ALTER TABLE read_model.receipts RENAME TO receipts_away`);
    const event = txEvent({ time: '2024-01-01T00:00:00Z', data: { transactionId: 'apple:t-stuck' } });
    await appendToEventLog(db.dataSource, TOPIC, [{ key: null, value: Buffer.from(JSON.stringify(event)) }]);

    await expectEventually(async () => {
      const ready = await api.get('/health/ready');
      expect(ready.status).toBe(503);
      expect(ready.body.checks.details.consumer).toMatchObject({
        state: 'stuck',
        reason: expect.stringContaining('partition 0 at offset 0: 42P01'),
        stuck: [{ partition: 0, offset: '0', code: '42P01', error: expect.stringContaining('receipts') }],
      });
    });
    const metrics = (await api.get('/metrics')).body as string;
    expect(metrics).toContain('subscription_records_projection_partition_stuck{partition="0",code="42P01"} 1');
    expect(metrics).toContain('subscription_records_projection_consumer_state{state="stuck"} 1');

    await db.dataSource.query(`ALTER TABLE read_model.receipts_away RENAME TO receipts`);
    // retried with backoff (0.5 s, 1 s, 2 s ...): goes on by itself
    await expectEventually(async () => expect((await api.get('/health/ready')).status).toBe(200), 30_000, 250);
    expect(await countRows(db.dataSource, 'read_model.transactions')).toBe(1);
    expect((await api.get('/metrics')).body).not.toContain('subscription_records_projection_partition_stuck{');
  });
});
