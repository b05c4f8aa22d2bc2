import fc from 'fast-check';
import { customerStatus, CUSTOMER_STATUSES, type StatusFacts } from '../../src/customers/customer-status.js';
import { filterConditions } from '../../src/customers/list-customers/customer-filters.js';
import { statusAtSql } from '../../src/projection/customer-status-days.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';

// The status predicates the listing runs in SQL (customer-filters.ts) and the pure rule
// (customerStatus), and the status the kept counts place a customer at (statusAtSql), must agree: generated summaries, asked at each stored instant, a millisecond
// before and after it, and combinations of statuses, on real PostgreSQL.

const base = Date.parse('2026-10-15T00:00:00.000Z');
const instant = fc.integer({ min: -5, max: 5 }).map((h) => new Date(base + h * 3_600_000));
const facts: fc.Arbitrary<StatusFacts> = fc.record({
  expirationDate: fc.option(instant, { nil: null }),
  graceFrom: fc.option(instant, { nil: null }),
  billingRetry: fc.boolean(),
});

describe('status predicates in SQL = customerStatus (real PostgreSQL)', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase('status_sql');
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('agree on generated summaries at boundary instants', async () => {
    let round = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(facts, { minLength: 1, maxLength: 12 }), fc.subarray([...CUSTOMER_STATUSES], { minLength: 1 }), async (rows, statuses) => {
        const app = `app-${++round}`;
        await db.dataSource.query(
          `INSERT INTO read_model.customers (app_id, application_username, first_seen_at, transaction_count, expiration_date, grace_from, billing_retry)
           SELECT $1, 'c' || n, '2026-01-01', 1, e, g, b FROM unnest($2::timestamptz[], $3::timestamptz[], $4::boolean[]) WITH ORDINALITY AS x(e, g, b, n)`,
          [app, rows.map((r) => r.expirationDate), rows.map((r) => r.graceFrom), rows.map((r) => r.billingRetry)],
        );
        const instants = rows.flatMap((r) => [r.expirationDate, r.graceFrom]).filter((d): d is Date => d !== null).flatMap((d) => [-1, 0, 1].map((ms) => new Date(d.getTime() + ms)));
        for (const now of [new Date(base), ...instants]) {
          const where = filterConditions({ statuses }, now, 2);
          const found = (await db.dataSource.query(`SELECT application_username AS name FROM read_model.customers WHERE app_id = $1${where.sql}`, [app, ...where.params])) as { name: string }[];
          const expected = rows.flatMap((r, i) => (statuses.includes(customerStatus(r, now)) ? [`c${i + 1}`] : []));
          expect(found.map((f) => f.name).sort()).toEqual(expected.sort());
          // the status the kept counts place a customer at (customer_status_days, the sweep)
          const placed = (await db.dataSource.query(`SELECT application_username AS name, ${statusAtSql('$2::timestamptz')} AS status FROM read_model.customers c WHERE app_id = $1 ORDER BY length(application_username), application_username`, [app, now])) as { name: string; status: string }[];
          expect(placed.map((p) => p.status)).toEqual(rows.map((r) => customerStatus(r, now)));
        }
      }),
      { numRuns: 60 },
    );
  });
});
