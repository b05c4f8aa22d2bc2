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
});
