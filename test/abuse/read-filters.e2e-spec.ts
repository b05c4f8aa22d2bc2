import { jest } from '@jest/globals';
import fc from 'fast-check';
import { startTestApp, type TestApp } from '../utils/app.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';
import { project, txEvent } from '../utils/events.js';

jest.setTimeout(180_000);

// Hostile values for the issue 24 filters: any bytes, percent-encoded, in any parameter, alone or
// together. The answer is 200 with an exact page, or 400 naming a parameter of the request; never a
// 5xx (a value reaching SQL untyped, a NUL, invalid UTF-8, a huge list).
const SCALE = Number(process.env.ABUSE_SCALE ?? 1);
const RUNS = Math.max(1, Math.round(100 * SCALE));

const CUSTOMER_PARAMS = ['status', 'renewalIntent', 'productId', 'expiresBefore', 'expiresAfter', 'applicationUsername', 'skip', 'limit'];
const TRANSACTION_PARAMS = ['transactionId', 'purchaseId', 'productId', 'platform', 'sandbox', 'startdate', 'enddate', 'skip', 'limit'];
const percentBytes = (bytes: Uint8Array) => [...bytes].map((b) => `%${b.toString(16).padStart(2, '0').toUpperCase()}`).join('');
const value = fc.oneof(
  fc.constantFrom('active', 'grace_period,none', 'Renew', 'Lapse', 'true', 'false', '2026-01-01', 'apple:t1', '', ',', '%00', '1e3', '-1'),
  fc.string({ maxLength: 40 }).map(encodeURIComponent),
  fc.uint8Array({ maxLength: 40 }).map(percentBytes),
  fc.integer({ min: 1, max: 3000 }).map((n) => Array.from({ length: n }, () => 'active').join(',')),
);

describe('hostile filter values (e2e, real PostgreSQL)', () => {
  let db: TestDatabase;
  let api: TestApp;
  let token: string;

  beforeAll(async () => {
    db = await createTestDatabase('abuse_filters');
    api = await startTestApp({ databaseUrl: db.url });
    token = api.token('app-1', ['customers:read', 'transactions:read']);
    await project(db.dataSource, [
      txEvent({
        time: '2026-01-01T00:00:00Z',
        data: {
          transactionId: 'apple:t1',
          receiptId: 'apple:r1',
          applicationUsername: 'ann',
          purchaseDate: '2026-01-01T00:00:00Z',
          expirationDate: '2099-01-01T00:00:00Z',
        },
      }),
    ]);
  });

  afterAll(async () => {
    await api?.close();
    await db?.drop();
  });

  for (const [listing, names] of [
    ['customers', CUSTOMER_PARAMS],
    ['transactions', TRANSACTION_PARAMS],
  ] as const) {
    it(`/v2/${listing}: 200 or a 400 naming one of the parameters sent, never 5xx (${RUNS} runs)`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(fc.tuple(fc.constantFrom(...names), value), { minLength: 1, maxLength: 4 }), async (pairs) => {
          const query = pairs.map(([k, v]) => `${k}=${v}`).join('&');
          const res = await api.get(`/v2/${listing}?${query}`, token);
          if (res.status === 200) {
            expect(res.body.paging.total).toBeGreaterThanOrEqual(res.body.rows.length);
          } else {
            expect({ query, status: res.status }).toEqual({ query, status: 400 });
            expect(pairs.map(([k]) => k)).toContain(res.body.parameter);
          }
        }),
        { numRuns: RUNS },
      );
    });
  }
});
