import { applyBatch } from '../../src/projection/apply-batch.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { linkEvent, txEvent } from '../utils/events.js';
import { countRows, projectFromScratch, snapshotReadModels } from '../utils/read-models.js';
import { prng, scenarioEvents, toBuffers } from '../utils/scenario.js';
import { erasureEvent } from '../utils/change-feed.js';
import { projectionSpec } from '../utils/projection-spec.js';

// given / when / then against real PostgreSQL through the projection's write path.

const messages = (values: Buffer[], from = 0) => values.map((value, i) => ({ offset: String(from + i), key: null, value }));
const batch = (values: Buffer[], from = 0, partition = 0, topic = 'events') => ({ topic, partition, messages: messages(values, from) });

describe('applyBatch (integration, real PostgreSQL)', () => {
  let a: TestDatabase;
  let b: TestDatabase;

  beforeEach(async () => {
    [a, b] = await Promise.all([createTestDatabase('proj_a'), createTestDatabase('proj_b')]);
  });
  afterEach(async () => {
    await Promise.all([a?.drop(), b?.drop()]);
  });

  it('runs twice, same result: a replayed batch is recognised by its offsets, replayed events change nothing', async () => {
    const values = toBuffers(scenarioEvents({ seed: 1, customers: 20 }));
    await applyBatch(a.dataSource, batch(values));
    const once = await snapshotReadModels(a.dataSource);
    const positions = await a.dataSource.query(`SELECT transaction_id, change_position FROM read_model.transactions ORDER BY 1`);
    const again = await applyBatch(a.dataSource, batch(values));
    expect(again).toMatchObject({ kind: 'applied', alreadyProjected: values.length, applied: [] });
    // the same events at new offsets (a producer retry) are applied again, and are idempotent
    const dup = await applyBatch(a.dataSource, batch(values, values.length));
    expect(dup).toMatchObject({ kind: 'applied', alreadyProjected: 0 });
    expect(await snapshotReadModels(a.dataSource)).toEqual(once);
    expect(await a.dataSource.query(`SELECT transaction_id, change_position FROM read_model.transactions ORDER BY 1`)).toEqual(positions);
  });

  it('arriving out of order in many small batches gives the rows of one from-scratch batch', async () => {
    const events = toBuffers(scenarioEvents({ seed: 2, customers: 40 }));
    const rnd = prng(99);
    const shuffled = [...events].sort(() => rnd() - 0.5);
    let offset = 0;
    while (offset < shuffled.length) {
      const size = 1 + Math.floor(rnd() * 7);
      await applyBatch(a.dataSource, batch(shuffled.slice(offset, offset + size), offset));
      offset += size;
    }
    await projectFromScratch(b.dataSource, events);
    expect(await snapshotReadModels(a.dataSource)).toEqual(await snapshotReadModels(b.dataSource));
  });

  // Changed rule (issue 26: event-id claims go): an id reused for other data is no longer ignored;
  // it is resolved like any snapshot, so the newer time wins in either order.
  it('given an applied event id, when it arrives again with different data and a later time, then the newer snapshot wins whatever the order', async () => {
    const first = txEvent({ id: 'same', time: '2024-01-01T00:00:00Z', data: { transactionId: 'apple:t1', expirationDate: '2024-02-01T00:00:00Z' } });
    const second = txEvent({ id: 'same', time: '2024-06-01T00:00:00Z', data: { transactionId: 'apple:t1', expirationDate: '2030-01-01T00:00:00Z' } });
    for (const [db, order] of [
      [a, [first, second]],
      [b, [second, first]],
    ] as const) {
      await projectionSpec(() => db.dataSource)
        .given([order[0]])
        .when([order[1]])
        .then(async (d) => {
          const [row] = await d.query(`SELECT expiration_date FROM read_model.transactions`);
          expect(row.expiration_date.toISOString()).toBe('2030-01-01T00:00:00.000Z');
        });
    }
  });

  it('given a newer snapshot stored, when an older one arrives, then only the first-event date of last resort may move', async () => {
    await projectionSpec(() => a.dataSource)
      .given([txEvent({ time: '2024-03-01T00:00:00Z', data: { transactionId: 'apple:t1', expirationDate: '2024-04-01T00:00:00Z' } })])
      .when([
        txEvent({
          time: '2024-02-01T00:00:00Z',
          data: { transactionId: 'apple:t1', expirationDate: '2024-03-01T00:00:00Z', purchaseDate: '2024-01-15T00:00:00Z' },
        }),
      ])
      .then(async (d) => {
        const [row] = await d.query(`SELECT expiration_date, purchase_date, occurred_at FROM read_model.transactions`);
        expect(row.expiration_date.toISOString()).toBe('2024-04-01T00:00:00.000Z');
        expect(row.purchase_date).toBeNull();
        // the winning snapshot carries no date: the row is filed at the earliest event's time
        expect(row.occurred_at.toISOString()).toBe('2024-02-01T00:00:00.000Z');
        expect(await d.query(`SELECT day::text, n::int FROM read_model.transaction_day_counts`)).toEqual([{ day: '2024-02-01', n: 1 }]);
      });
  });

  it('given a stored transaction, when a newer snapshot changes its product, sandbox flag and day, then its filter count moves with it', async () => {
    const cells = async () =>
      a.dataSource.query(`SELECT product_id, platform, sandbox, day::text, n::int FROM read_model.transaction_filter_day_counts ORDER BY product_id, day`);
    await applyBatch(
      a.dataSource,
      batch(
        toBuffers([
          txEvent({ time: '2024-03-01T10:00:00Z', data: { transactionId: 'apple:t1', productId: 'apple:monthly', expirationDate: '2024-04-01T00:00:00Z' } }),
          txEvent({ time: '2024-03-01T11:00:00Z', data: { transactionId: 'apple:t2', productId: 'apple:monthly', expirationDate: '2024-04-01T00:00:00Z' } }),
        ]),
      ),
    );
    expect(await cells()).toEqual([{ product_id: 'apple:monthly', platform: 'apple', sandbox: false, day: '2024-03-01', n: 2 }]);
    // the store corrects t1: another product, marked sandbox, bought the day before
    await applyBatch(
      a.dataSource,
      batch(
        toBuffers([
          txEvent({
            time: '2024-03-05T00:00:00Z',
            data: {
              transactionId: 'apple:t1',
              productId: 'apple:yearly',
              sandbox: true,
              purchaseDate: '2024-02-29T08:00:00Z',
              expirationDate: '2025-02-28T00:00:00Z',
            },
          }),
        ]),
        2,
      ),
    );
    expect(await cells()).toEqual([
      { product_id: 'apple:monthly', platform: 'apple', sandbox: false, day: '2024-03-01', n: 1 },
      { product_id: 'apple:yearly', platform: 'apple', sandbox: true, day: '2024-02-29', n: 1 },
    ]);
    // an older snapshot of t2 (another product) loses: only its date of last resort moves, not its product
    await applyBatch(
      a.dataSource,
      batch(toBuffers([txEvent({ time: '2024-02-20T00:00:00Z', data: { transactionId: 'apple:t2', productId: 'apple:weekly' } })]), 3),
    );
    expect(await cells()).toEqual([
      { product_id: 'apple:monthly', platform: 'apple', sandbox: false, day: '2024-02-20', n: 1 },
      { product_id: 'apple:yearly', platform: 'apple', sandbox: true, day: '2024-02-29', n: 1 },
    ]);
    // and the kept counts are the rows' own, counted again
    expect(await cells()).toEqual(
      await a.dataSource.query(`SELECT product_id, platform, sandbox IS TRUE AS sandbox, (occurred_at AT TIME ZONE 'UTC')::date::text AS day, count(*)::int AS n
                                FROM read_model.transactions GROUP BY 1, 2, 3, 4 ORDER BY product_id, day`),
    );
  });

  it('a receipt moving between customers: the later link wins whatever the order; both customers stay', async () => {
    const older = linkEvent({ time: '2024-01-01T00:00:00Z', receiptId: 'apple:r1', user: 'ann' });
    const newer = linkEvent({ time: '2024-02-01T00:00:00Z', receiptId: 'apple:r1', user: 'bob' });
    for (const [db, order] of [
      [a, [newer, older]],
      [b, [older, newer]],
    ] as const) {
      await projectionSpec(() => db.dataSource)
        .given([order[0]])
        .when([order[1]])
        .then(async (d) => {
          expect(await d.query(`SELECT receipt_id, application_username FROM read_model.receipts`)).toEqual([
            { receipt_id: 'apple:r1', application_username: 'bob' },
          ]);
          const customers = await d.query(`SELECT application_username FROM read_model.customers ORDER BY first_seen_at`);
          expect(customers.map((c: { application_username: string }) => c.application_username)).toEqual(['ann', 'bob']);
        });
    }
  });

  it('given a stored snapshot, when the same event comes again from another producer, then nothing changes', async () => {
    const event = txEvent({
      id: 'e-dup',
      time: '2024-03-01T00:00:00Z',
      data: { transactionId: 'apple:t1', applicationUsername: 'ann', expirationDate: '2024-04-01T00:00:00Z' },
    });
    await projectionSpec(() => a.dataSource)
      .given([event])
      .when([event], { numberOfTimes: 3 })
      .thenNothingChanged();
  });

  it('keeps tenants separate even with identical ids', async () => {
    const ev = (app: string) => txEvent({ app, id: 'e1', time: '2024-01-01T00:00:00Z', data: { transactionId: 'apple:t1', applicationUsername: 'ann' } });
    await applyBatch(a.dataSource, batch(toBuffers([ev('app-1'), ev('app-2')])));
    expect(await countRows(a.dataSource, 'read_model.transactions')).toBe(2);
    expect(await countRows(a.dataSource, 'read_model.customers')).toBe(2);
  });

  it('dead-letters bad messages whole, with position and reason, and moves on', async () => {
    const good = toBuffers([txEvent({ time: '2024-01-01T00:00:00Z', data: { transactionId: 'apple:t1' } })]);
    const bad = [
      Buffer.from('{"not": "an event"'),
      Buffer.from(JSON.stringify(txEvent({ time: '2024-01-01T00:00:00Z', data: { transactionId: 'no-platform' } }))),
    ];
    const outcome = await applyBatch(a.dataSource, batch([bad[0], ...good, bad[1]], 0, 2));
    expect(outcome).toMatchObject({ kind: 'applied', nextOffset: '3' });
    const rows = await a.dataSource.query(`SELECT topic, partition, "offset"::int AS offset, code, reason, value FROM public.dead_letters ORDER BY "offset"`);
    expect(rows.map((r: { offset: number; code: string }) => [r.offset, r.code])).toEqual([
      [0, 'not_json'],
      [2, 'bad_identifier'],
    ]);
    expect(rows[0]).toMatchObject({ topic: 'events', partition: 2, value: bad[0] });
    expect(await countRows(a.dataSource, 'read_model.transactions')).toBe(1);
  });

  it('refuses a batch that would leave a hole after the stored offset', async () => {
    const values = toBuffers(scenarioEvents({ seed: 3, customers: 2 }));
    await applyBatch(a.dataSource, batch(values.slice(0, 2)));
    expect(await applyBatch(a.dataSource, batch(values.slice(3), 3))).toEqual({ kind: 'gap', storedOffset: '2' });
    expect(await applyBatch(a.dataSource, batch(values.slice(3), 3), { logStartOffset: '3' })).toMatchObject({ kind: 'applied' });
  });

  it('given customers, when one renews and turns auto-renew off, a receipt moves to a new customer and one is erased, then their filter cells follow', async () => {
    const cells = async () =>
      a.dataSource.query(
        `SELECT end_day::text, product_id, renewal_intent, sum(n)::int AS n FROM read_model.customer_end_weeks WHERE grace_day = 'infinity' AND NOT billing_retry GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
      );
    const buy = (
      id: string,
      receipt: string,
      user: string,
      productId: string,
      time: string,
      expirationDate: string,
      renewalIntent: string,
      purchaseId?: string,
    ) =>
      txEvent({
        time,
        data: {
          transactionId: `apple:${id}`,
          receiptId: `apple:${receipt}`,
          applicationUsername: user,
          productId,
          purchaseDate: time,
          expirationDate,
          renewalIntent,
          ...(purchaseId ? { purchaseId } : {}),
        },
      });
    let offset = 0;
    const apply = async (events: Record<string, unknown>[]) => {
      const values = toBuffers(events);
      await applyBatch(a.dataSource, batch(values, offset));
      offset += values.length;
    };
    await apply([
      buy('a1', 'r-a', 'ann', 'apple:monthly', '2024-03-01T00:00:00Z', '2024-04-01T00:00:00Z', 'Renew'),
      buy('b1', 'r-b', 'bob', 'apple:yearly', '2024-03-01T00:00:00Z', '2025-03-01T00:00:00Z', 'Renew'),
    ]);
    expect(await cells()).toEqual([
      { end_day: '2024-04-01', product_id: 'apple:monthly', renewal_intent: 'Renew', n: 1 },
      { end_day: '2025-03-01', product_id: 'apple:yearly', renewal_intent: 'Renew', n: 1 },
    ]);
    await apply([buy('a2', 'r-a', 'ann', 'apple:monthly', '2024-04-01T00:00:00Z', '2024-05-01T00:00:00Z', 'Lapse', 'apple:p-apple:a1')]);
    expect(await cells()).toEqual([
      { end_day: '2024-05-01', product_id: 'apple:monthly', renewal_intent: 'Lapse', n: 1 },
      { end_day: '2025-03-01', product_id: 'apple:yearly', renewal_intent: 'Renew', n: 1 },
    ]);
    // bob's receipt goes to carl: bob keeps his row with no subscription (status none)
    await apply([linkEvent({ time: '2024-04-10T00:00:00Z', receiptId: 'apple:r-b', user: 'carl' })]);
    expect(await cells()).toEqual([
      { end_day: '-infinity', product_id: '', renewal_intent: '', n: 1 },
      { end_day: '2024-05-01', product_id: 'apple:monthly', renewal_intent: 'Lapse', n: 1 },
      { end_day: '2025-03-01', product_id: 'apple:yearly', renewal_intent: 'Renew', n: 1 },
    ]);
    await apply([erasureEvent('app-1', 'ann', '2024-04-20T00:00:00Z')]);
    expect(await cells()).toEqual([
      { end_day: '-infinity', product_id: '', renewal_intent: '', n: 1 },
      { end_day: '2025-03-01', product_id: 'apple:yearly', renewal_intent: 'Renew', n: 1 },
    ]);
    // the kept cells are what the rows add up to (snapshotReadModels counts them again and compares)
    await snapshotReadModels(a.dataSource);
  });

  it('concurrent batches of different partitions touching the same customers neither deadlock nor lose rows', async () => {
    const events = scenarioEvents({ seed: 4, customers: 60, apps: ['app-1'] });
    // the same customers named from every partition, in opposite orders
    const links = (p: number) =>
      events
        .filter((e) => e.type === 'transaction.updated')
        .map((e, i) =>
          linkEvent({
            id: `l-${p}-${i}`,
            time: `2024-0${1 + p}-01T00:00:00Z`,
            receiptId: (e.data as { receiptId: string }).receiptId,
            user: `shared-${i % 7}`,
          }),
        );
    const parts = [0, 1, 2, 3].map((p) => toBuffers(p % 2 ? links(p).reverse() : links(p)));
    for (let round = 0; round < 3; round++) {
      await Promise.all(parts.map((values, p) => applyBatch(a.dataSource, batch(values.slice(round * 20, round * 20 + 20), round * 20, p))));
    }
    await projectFromScratch(
      b.dataSource,
      parts.flatMap((values) => values.slice(0, 60)),
    );
    const [x, y] = [await snapshotReadModels(a.dataSource), await snapshotReadModels(b.dataSource)];
    expect(x.receipts).toEqual(y.receipts);
    expect(x.customers).toEqual(y.customers);
  });
});

describe('applyBatch input checks', () => {
  it('refuses messages that are not in ascending offset order', async () => {
    const db = await createTestDatabase('proj_order');
    try {
      const values = toBuffers(scenarioEvents({ seed: 5, customers: 2 }));
      await expect(
        applyBatch(db.dataSource, {
          topic: 't',
          partition: 0,
          messages: [
            { offset: '0', key: null, value: values[0] },
            { offset: '10', key: null, value: values[1] },
            { offset: '2', key: null, value: values[2] },
          ],
        }),
      ).rejects.toThrow(/not in offset order/);
      expect(await countRows(db.dataSource, 'read_model.transactions')).toBe(0);
    } finally {
      await db.drop();
    }
  });
});
