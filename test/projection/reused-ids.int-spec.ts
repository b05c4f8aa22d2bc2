import { jest } from '@jest/globals';
import { appendToEventLog, readEventLog } from '../../src/event-log/event-log.js';
import { applyBatch } from '../../src/projection/apply-batch.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { linkEvent, txEvent } from '../utils/events.js';
import { runCli } from '../utils/processes.js';
import { arrivalsApart, snapshotReadModels } from '../utils/read-models.js';

jest.setTimeout(120_000);

// Event-id claims are gone (issue 26): `source` + `id` name one event, and an id a producer reuses
// for other data is resolved like any snapshot, newest (time, id) first, equal versions by content.
// given / when / then through the live path (embedded log, real PostgreSQL), then `rebuild --verify`
// and `rebuild` from the same log must agree with it.

const topic = 'reused-ids';
const T = '2026-05-01T10:00:00Z';
const first = txEvent({
  id: 'same',
  time: T,
  data: { transactionId: 'apple:t1', receiptId: 'apple:r1', applicationUsername: 'ann', purchaseDate: T, expirationDate: '2026-06-01T10:00:00Z' },
});
// the same id and time, other data: another expiration, another username, another receipt link
const other = txEvent({
  id: 'same',
  time: T,
  data: {
    transactionId: 'apple:t1',
    receiptId: 'apple:r1',
    applicationUsername: 'bob',
    purchaseDate: T,
    expirationDate: '2027-05-01T10:00:00Z',
    renewalIntent: 'Lapse',
  },
});
const linkA = linkEvent({ id: 'link', time: T, receiptId: 'apple:r2', user: 'cid' });
const linkB = linkEvent({ id: 'link', time: T, receiptId: 'apple:r2', user: 'dee' });

/** Appends to the embedded log and applies what is new, as the live consumer would. */
async function publish(db: TestDatabase, events: unknown[]): Promise<void> {
  const values = events.map((e) => ({ key: null, value: Buffer.from(JSON.stringify(e)) }));
  await appendToEventLog(db.dataSource, topic, values);
  const [{ next }] = await db.dataSource.query(`SELECT coalesce((SELECT next_offset FROM read_model.projection_offsets WHERE topic = $1), 0)::text AS next`, [
    topic,
  ]);
  const outcome = await applyBatch(db.dataSource, { topic, partition: 0, messages: await readEventLog(db.dataSource, topic, 0, next, 1000) });
  expect(outcome).toMatchObject({ kind: 'applied', deadLetters: [] });
}

const changePositions = (db: TestDatabase) =>
  db.dataSource.query(
    `SELECT 't' AS t, transaction_id AS k, change_position::text AS p FROM read_model.transactions
     UNION ALL SELECT 'c', application_username, change_position::text FROM read_model.customers ORDER BY 1, 2`,
  );

async function expectRebuildAgrees(db: TestDatabase): Promise<void> {
  const live = await snapshotReadModels(db.dataSource);
  const env = { DATABASE_URL: db.url, KAFKA_TOPIC: topic, LOG_LEVEL: 'error' };
  const verify = await runCli(['rebuild', '--verify'], env);
  expect({ code: verify.code, out: verify.stdout }).toMatchObject({ code: 0, out: expect.stringMatching(/equal a fresh projection/) });
  expect((await runCli(['rebuild'], env)).code).toBe(0);
  expect(await snapshotReadModels(db.dataSource)).toEqual(live);
}

describe('an event id applied again (integration: live path, rebuild and verify, real PostgreSQL)', () => {
  let a: TestDatabase;
  let b: TestDatabase;
  beforeEach(async () => {
    [a, b] = await Promise.all([createTestDatabase('reuse_a'), createTestDatabase('reuse_b')]);
  });
  afterEach(async () => {
    await Promise.all([a?.drop(), b?.drop()]);
  });

  it('given applied events, when the same ids arrive again with the same data at new offsets, then nothing changes and no change position moves', async () => {
    await publish(a, [first, linkA]);
    const rows = await snapshotReadModels(a.dataSource);
    const positions = await changePositions(a);
    await publish(a, [first, linkA]);
    await publish(a, [{ ...linkA }, { ...first }]);
    expect(await snapshotReadModels(a.dataSource)).toEqual(rows);
    expect(await changePositions(a)).toEqual(positions);
    await expectRebuildAgrees(a);
  });

  it('given an applied event, when its id arrives with other data at the same time, then the same rows whichever came first, live and rebuilt', async () => {
    await publish(a, [first, linkA]);
    await publish(a, [other, linkB]);
    await publish(b, [other, linkB]);
    await publish(b, [first, linkA]);
    const [inA, inB] = [await snapshotReadModels(a.dataSource), await snapshotReadModels(b.dataSource)];
    // when each log received the winning copy is that log's own fact; everything else is the same
    expect(arrivalsApart(inA)).toEqual(arrivalsApart(inB));
    // one snapshot won whole, not a mix of the two
    const [row] = inA.transactions as { expiration_date: Date; renewal_intent: string | null }[];
    expect([
      ['2026-06-01T10:00:00.000Z', null],
      ['2027-05-01T10:00:00.000Z', 'Lapse'],
    ]).toContainEqual([row.expiration_date.toISOString(), row.renewal_intent]);
    // both usernames were named: both customers exist, whichever link won
    expect((inA.customers as { application_username: string }[]).map((c) => c.application_username).sort()).toEqual(['ann', 'bob', 'cid', 'dee']);
    await expectRebuildAgrees(a);
    await expectRebuildAgrees(b);
  });
});
