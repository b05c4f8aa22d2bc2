import fc from 'fast-check';
import { decodeEvent } from '../../src/events/decode-event.js';
import { applyBatch } from '../../src/projection/apply-batch.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';

// Whatever the event decoder accepts, PostgreSQL stores: an accepted event that fails its batch
// would stop its partition. Strings with NUL, surrogates, long multi-byte text; dates at the edges
// of what PostgreSQL and JavaScript represent; numbers at their limits.

const RUNS = Number(process.env.FUZZ_RUNS ?? 150);

describe('event decoder fuzz (integration, real PostgreSQL)', () => {
  let db: TestDatabase;
  let offset = 0;

  beforeAll(async () => {
    db = await createTestDatabase('decfuzz');
  });
  afterAll(async () => {
    await db?.drop();
  });

  const text = fc.oneof(
    fc.string({ maxLength: 20 }),
    fc.string({ unit: 'binary', maxLength: 20 }),
    fc.constantFrom('\u0000', 'a\u0000b', '\ud800', '\udfff', '\ud83d\ude00', 'é'.repeat(300), '😀'.repeat(130), "O'Brien", '%00', ''),
  );
  const id = fc.tuple(fc.constantFrom('apple', 'google', 'x.y-z_1'), text).map(([p, t]) => `${p}:${t}`);
  const date = fc.oneof(
    fc.date({ min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59Z'), noInvalidDate: true }).map((d) => d.toISOString()),
    fc.constantFrom(
      '0000-01-01T00:00:00Z',
      '9999-12-31T23:59:59.999999Z',
      '9999-12-31T23:00:00-02:00',
      '0001-01-01T00:30:00+01:00',
      '2024-02-29T12:00:00.1234567Z',
      '1970-01-01T00:00:00Z',
    ),
  );
  const number = fc.oneof(fc.integer(), fc.double({ noNaN: true }), fc.constantFrom(Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 2147483647, 1e308, -0));
  const event = fc.record({
    specversion: fc.constant('1.0'),
    id: text,
    source: fc.constant('fuzz'),
    type: fc.constantFrom('transaction.updated', 'receipt.linked'),
    time: date,
    appid: text,
    data: fc.record(
      {
        transactionId: id,
        purchaseId: text,
        productId: id,
        platform: fc.constantFrom('apple', 'google', 'x.y-z_1'),
        receiptId: id,
        applicationUsername: text,
        purchaseDate: date,
        expirationDate: date,
        revocationDate: date,
        gracePeriodExpirationDate: date,
        renewalIntent: text,
        quantity: number,
        amountUSD: number,
        amountMicros: number,
        currency: fc.constantFrom('USD', 'EUR', 'usd'),
        isUpgraded: fc.boolean(),
        extra: text,
      },
      { requiredKeys: [] },
    ),
  });

  it('stores every event it accepts', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(event, { minLength: 1, maxLength: 8 }), async (events) => {
        const values = events.map((e) => Buffer.from(JSON.stringify(e)));
        // far in the future, so no generated time counts as ahead of the log
        const accepted = values.filter((v) => decodeEvent(v, { receivedAt: Date.parse('9999-12-31T23:59:59Z') }).ok);
        if (accepted.length === 0) return;
        const messages = accepted.map((value) => ({ offset: String(offset++), key: null, value, timestamp: String(Date.parse('9999-12-31T23:59:59Z')) }));
        const outcome = await applyBatch(db.dataSource, { topic: 'fuzz', partition: 0, messages });
        expect(outcome.kind).toBe('applied');
        if (outcome.kind === 'applied') expect(outcome.deadLetters).toEqual([]);
      }),
      { numRuns: RUNS },
    );
  });
});
