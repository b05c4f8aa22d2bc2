import { createTestDatabase, type TestDatabase } from '../utils/database.js';

// The entities describe the tables; the migrations create them. TypeORM's own schema diff between
// the two must be empty, or an entity (or a migration) has drifted.
describe('entities match the migrated schema (integration, real PostgreSQL)', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase('entities');
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('TypeORM would change nothing to make the database fit the entities', async () => {
    const diff = await db.dataSource.driver.createSchemaBuilder().log();
    expect(diff.upQueries.map((q) => q.query)).toEqual([]);
  });

  it('the indexes TypeORM leaves alone are as the migrations made them: the filtered pages count on them alone', async () => {
    const defs = await db.dataSource.query(
      `SELECT indexdef AS def FROM pg_indexes WHERE schemaname = 'read_model' AND indexname IN ('transactions_page_idx', 'customers_page_idx', 'customers_access_end_idx', 'customers_grace_idx') ORDER BY indexname`,
    );
    expect(defs.map((d: { def: string }) => d.def)).toEqual([
      'CREATE INDEX customers_access_end_idx ON read_model.customers USING btree (app_id, expiration_date) INCLUDE (first_seen_at, grace_from, billing_retry, renewal_intent, current_product_id)',
      'CREATE INDEX customers_grace_idx ON read_model.customers USING btree (app_id, grace_from) INCLUDE (first_seen_at, expiration_date, billing_retry, renewal_intent, current_product_id) WHERE (grace_from IS NOT NULL)',
      'CREATE INDEX customers_page_idx ON read_model.customers USING btree (app_id, first_seen_at, application_username) INCLUDE (expiration_date, grace_from, billing_retry, renewal_intent, current_product_id)',
      'CREATE INDEX transactions_page_idx ON read_model.transactions USING btree (app_id, occurred_at, transaction_id) INCLUDE (platform, sandbox)',
    ]);
  });
});
