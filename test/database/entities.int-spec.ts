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

  it('the index TypeORM leaves alone is as the migration made it: the filtered page walks it alone', async () => {
    const [{ def }] = await db.dataSource.query(`SELECT indexdef AS def FROM pg_indexes WHERE schemaname = 'read_model' AND indexname = 'transactions_page_idx'`);
    expect(def).toBe('CREATE INDEX transactions_page_idx ON read_model.transactions USING btree (app_id, occurred_at, transaction_id) INCLUDE (platform, sandbox)');
  });
});
