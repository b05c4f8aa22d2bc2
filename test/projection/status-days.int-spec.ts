import { applyBatch } from '../../src/projection/apply-batch.js';
import { sweepApp, sweepStatuses } from '../../src/projection/sweep-statuses.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { project, txEvent } from '../utils/events.js';
import { expectStatusDaysKept } from '../utils/read-models.js';

// customer_status_days (docs/api.md "How the pages stay fast") against the rows, checked in SQL by
// expectStatusDaysKept: at microsecond boundaries, for a new application's first batches, and
// across sweeps of many days either way.

const watermarks = (db: TestDatabase) =>
  db.dataSource.query(`SELECT app_id, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') AS at FROM read_model.customer_status_watermarks ORDER BY 1`);

describe('customer_status_days (integration, real PostgreSQL)', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase('status_days');
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('places a customer whose access ends half a millisecond after the watermark as PostgreSQL does: active at it', async () => {
    const app = 'micros';
    await project(db.dataSource, [txEvent({ app, time: '2026-03-01T00:00:00Z', data: { transactionId: 'apple:m0', applicationUsername: 'first', purchaseDate: '2026-03-01T00:00:00Z', expirationDate: '2026-04-01T00:00:00Z' } })]);
    await sweepApp(db.dataSource, app, new Date('2026-04-01T10:00:00.000Z'));
    await project(db.dataSource, [
      txEvent({ app, time: '2026-03-02T00:00:00Z', data: { transactionId: 'apple:m1', applicationUsername: 'half-ms', purchaseDate: '2026-03-02T00:00:00Z', expirationDate: '2026-04-01T10:00:00.000500Z' } }),
      txEvent({ app, time: '2026-03-03T00:00:00Z', data: { transactionId: 'apple:m2', applicationUsername: 'grace', purchaseDate: '2026-03-03T00:00:00Z', expirationDate: '2026-03-31T00:00:00Z', gracePeriodExpirationDate: '2026-04-09T00:00:00Z', isBillingRetryPeriod: true } }),
    ]);
    await expectStatusDaysKept(db.dataSource);
    const [{ status }] = await db.dataSource.query(`SELECT status FROM read_model.customer_status_days WHERE app_id = $1 AND first_day = '2026-03-02'`, [app]);
    expect(status).toBe('active');
  });

  it("a new application's first batches do not wait for each other, and the sweep gives it a watermark", async () => {
    const app = 'new-app';
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let heldWritten!: () => void;
    const written = new Promise<void>((r) => (heldWritten = r));
    const batch = (partition: number, id: string, day: string) => ({
      topic: 'new-app',
      partition,
      messages: [{ offset: '0', key: null, value: Buffer.from(JSON.stringify(txEvent({ app, time: `${day}T00:00:00Z`, data: { transactionId: id, applicationUsername: id, purchaseDate: `${day}T00:00:00Z`, expirationDate: `${day}T12:00:00Z` } }))) }],
    });
    const held = applyBatch(db.dataSource, batch(0, 'apple:held', '2024-01-01'), {
      beforeCommit: async () => {
        heldWritten();
        await gate;
      },
    });
    await written;
    // Placed at -infinity (no watermark row yet): the later batch commits while the first is open.
    await applyBatch(db.dataSource, batch(1, 'apple:later', '2024-01-02'));
    release();
    await held;
    await expectStatusDaysKept(db.dataSource);
    expect((await watermarks(db)).map((w: { app_id: string }) => w.app_id)).not.toContain(app);
    expect(await sweepStatuses(db.dataSource, new Date('2026-01-01T00:00:00.000Z'))).toBeGreaterThanOrEqual(2);
    expect(await watermarks(db)).toContainEqual({ app_id: app, at: '2026-01-01T00:00:00.000000' });
    await expectStatusDaysKept(db.dataSource);
  });

  it('sweeps running while batches of the app commit leave the counts equal to the rows', async () => {
    const app = 'busy';
    const day = (n: number) => `2026-05-${String(1 + (n % 28)).padStart(2, '0')}T${String(n % 24).padStart(2, '0')}:00:00Z`;
    let stop = false;
    const sweeps = (async () => {
      let n = 0;
      while (!stop) await sweepApp(db.dataSource, app, new Date(day(n++ * 7)));
      return n;
    })();
    await Promise.all(
      [0, 1, 2, 3].map(async (partition) => {
        for (let round = 0; round < 8; round++) {
          // the same six customers from every partition: renewals, lapses and first purchases interleave
          const messages = [0, 1, 2].map((i) => {
            const n = partition * 31 + round * 7 + i;
            const user = `u${(partition + round + i) % 6}`;
            const data = { transactionId: `apple:busy-${partition}-${round}-${i}`, applicationUsername: user, purchaseDate: day(n), expirationDate: day(n + 3), renewalIntent: n % 2 ? 'Renew' : 'Lapse' };
            return { offset: String(round * 3 + i), key: null, value: Buffer.from(JSON.stringify(txEvent({ app, time: day(n), data }))) };
          });
          await applyBatch(db.dataSource, { topic: 'busy', partition, messages });
        }
      }),
    );
    stop = true;
    expect(await sweeps).toBeGreaterThan(0);
    await expectStatusDaysKept(db.dataSource);
  });

  it('a sweep across many days moves every customer whose status changed, either way', async () => {
    const app = 'far';
    await project(
      db.dataSource,
      [1, 5, 9, 20].map((d) => txEvent({ app, time: '2026-01-01T00:00:00Z', data: { transactionId: `apple:f${d}`, applicationUsername: `u${d}`, purchaseDate: '2026-01-01T00:00:00Z', expirationDate: `2026-02-${String(d).padStart(2, '0')}T06:00:00Z` } })),
    );
    await sweepApp(db.dataSource, app, new Date('2026-01-31T00:00:00.000Z'));
    expect(await sweepApp(db.dataSource, app, new Date('2026-02-10T00:00:00.000Z'))).toBe(3);
    await expectStatusDaysKept(db.dataSource);
    expect(await sweepApp(db.dataSource, app, new Date('2026-01-03T00:00:00.000Z'))).toBe(3);
    expect(await watermarks(db)).toContainEqual({ app_id: app, at: '2026-01-03T00:00:00.000000' });
    await expectStatusDaysKept(db.dataSource);
  });
});
