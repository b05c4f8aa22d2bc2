import { Projector } from '../../src/ingestion/projector.js';
import { LoggingObserver } from '../../src/ingestion/logging-observer.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { txEvent } from '../utils/events.js';
import { toBuffers } from '../utils/scenario.js';

// No single message may stop a partition: what PostgreSQL refuses for its content is isolated by
// splitting the batch and dead-lettered; what the decoder refuses never reaches PostgreSQL.

const messages = (values: Buffer[]) => values.map((value, i) => ({ offset: String(i), key: Buffer.from([0x6b, 0, 0x79]), value }));

describe('poison events (integration, real PostgreSQL)', () => {
  let db: TestDatabase;
  let projector: Projector;

  beforeEach(async () => {
    db = await createTestDatabase('poison');
    projector = new Projector(db.dataSource, new LoggingObserver(), { eventTimeMaxSkewMs: 86_400_000 });
  });
  afterEach(async () => {
    await db?.drop();
  });

  const control = { shouldContinue: () => true };
  const events = (n: number) =>
    Array.from({ length: n }, (_, i) => txEvent({ id: `e${i}`, time: '2024-01-01T00:00:00Z', data: { transactionId: `apple:t${i}` } }));

  it('splits a batch PostgreSQL refuses for one event, dead-letters that event with its error, applies the others', async () => {
    // stands in for whatever validation cannot foresee: PostgreSQL refuses this one row
    await db.dataSource.query(`ALTER TABLE read_model.transactions ADD CONSTRAINT no_poison CHECK (transaction_id <> 'apple:t5')`);
    const outcome = await projector.apply({ topic: 'events', partition: 0, messages: messages(toBuffers(events(12))) }, control);
    expect(outcome).toMatchObject({ kind: 'applied', nextOffset: '12' });
    const ids = await db.dataSource.query(`SELECT transaction_id FROM read_model.transactions ORDER BY transaction_id`);
    expect(ids.map((r: { transaction_id: string }) => r.transaction_id)).toEqual([
      'apple:t0',
      'apple:t1',
      'apple:t10',
      'apple:t11',
      'apple:t2',
      'apple:t3',
      'apple:t4',
      'apple:t6',
      'apple:t7',
      'apple:t8',
      'apple:t9',
    ]);
    const [dead] = await db.dataSource.query(`SELECT "offset"::int AS offset, code, reason, key FROM public.dead_letters`);
    expect(dead).toMatchObject({ offset: 5, code: 'projection_failed', reason: expect.stringContaining('no_poison'), key: Buffer.from([0x6b, 0, 0x79]) });
  });

  it('dead-letters events PostgreSQL could not store, with NUL-byte keys kept as bytes, and goes on', async () => {
    const values = [
      ...toBuffers(events(2)),
      Buffer.from(JSON.stringify(txEvent({ id: 'nul', time: '2024-01-01T00:00:00Z', data: { transactionId: 'apple:t\u0000' } }))),
      Buffer.from(JSON.stringify(txEvent({ id: 'y0', time: '0000-01-01T00:00:00Z', data: { transactionId: 'apple:y0' } }))),
      Buffer.from(JSON.stringify(txEvent({ id: 'future', time: '2999-01-01T00:00:00Z', data: { transactionId: 'apple:f' } }))),
      ...toBuffers([txEvent({ id: 'last', time: '2024-01-01T00:00:00Z', data: { transactionId: 'apple:last' } })]),
    ];
    const outcome = await projector.apply({ topic: 'events', partition: 0, messages: messages(values) }, control);
    expect(outcome).toMatchObject({ kind: 'applied', nextOffset: '6' });
    const dead = await db.dataSource.query(`SELECT "offset"::int AS offset, code, key FROM public.dead_letters ORDER BY "offset"`);
    expect(dead.map((d: { offset: number; code: string }) => [d.offset, d.code])).toEqual([
      [2, 'unstorable_value'],
      [3, 'unstorable_value'],
      [4, 'future_time'],
    ]);
    expect(dead[0].key).toEqual(Buffer.from([0x6b, 0, 0x79]));
    expect(await db.dataSource.query(`SELECT count(*)::int AS n FROM read_model.transactions`)).toEqual([{ n: 3 }]);
  });
});
