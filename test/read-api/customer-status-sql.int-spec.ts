import fc from 'fast-check';
import { customerStatus, CUSTOMER_STATUSES, type StatusFacts } from '../../src/customers/customer-status.js';
import { filterConditions } from '../../src/customers/list-customers/customer-filters.js';
import { ListCustomersQuery } from '../../src/customers/list-customers/list-customers.query.js';
import { filteredPageStartSql } from '../../src/customers/list-customers/list-customers.sql.js';
import { recountCustomerCellsSql } from '../../src/projection/customer-cells.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';

// The status rule the listing runs in SQL (statusSql, through customer-filters.ts on the rows and
// on the count cells' days) and the pure rule (customerStatus) must agree: generated summaries,
// asked at each stored instant, a millisecond before and after it, and combinations of statuses,
// on real PostgreSQL; the cells at instants on other days than their access end and grace start.

const base = Date.parse('2026-10-15T00:00:00.000Z');
// hours over five UTC days: many instants fall on other days than an access end or grace start
const instant = fc.integer({ min: -60, max: 60 }).map((h) => new Date(base + h * 3_600_000));
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
           SELECT $1, 'c' || n, '2026-01-01'::timestamptz + n * interval '3 days', 1, e, g, b FROM unnest($2::timestamptz[], $3::timestamptz[], $4::boolean[]) WITH ORDINALITY AS x(e, g, b, n)`,
          [app, rows.map((r) => r.expirationDate), rows.map((r) => r.graceFrom), rows.map((r) => r.billingRetry)],
        );
        for (const statement of recountCustomerCellsSql('read_model')) await db.dataSource.query(statement);
        const instants = rows
          .flatMap((r) => [r.expirationDate, r.graceFrom])
          .filter((d): d is Date => d !== null)
          .flatMap((d) => [-1, 0, 1].map((ms) => new Date(d.getTime() + ms)));
        for (const now of [new Date(base), ...instants]) {
          const where = filterConditions({ statuses }, now, 2);
          const found = (await db.dataSource.query(`SELECT application_username AS name FROM read_model.customers WHERE app_id = $1${where.sql}`, [
            app,
            ...where.params,
          ])) as { name: string }[];
          const expected = rows.flatMap((r, i) => (statuses.includes(customerStatus(r, now)) ? [`c${i + 1}`] : []));
          expect(found.map((f) => f.name).sort()).toEqual(expected.sort());
          // the total of a status page: the count cells decided on their days, plus the rows of the instant's day
          const start = filteredPageStartSql(new ListCustomersQuery(app, 0, 100, undefined, { statuses }), now);
          const [{ total }] = (await db.dataSource.query(start.sql, start.params)) as { total: string | null }[];
          expect({ now, total: Number(total ?? 0) }).toEqual({ now, total: expected.length });
        }
      }),
      { numRuns: 60 },
    );
  });
});
