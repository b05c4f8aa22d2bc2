import { DATABASE_FUNCTIONS } from '../../src/database/functions.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';

// The functions every migration together leaves are the ones src/database/functions.ts declares:
// each declaration, run over a migrated database, changes nothing PostgreSQL stores of it.

describe('database functions (integration, real PostgreSQL)', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase('functions');
  });

  afterAll(async () => {
    await db?.drop();
  });

  it.each(DATABASE_FUNCTIONS.map((f) => [f.signature, f] as const))('%s is as declared', async (_signature, f) => {
    const definition = `SELECT pg_get_functiondef($1::regprocedure) AS def`;
    const runner = db.dataSource.createQueryRunner();
    try {
      const [{ def: migrated }] = await runner.query(definition, [f.signature]);
      await runner.startTransaction();
      await runner.query(f.sql);
      const [{ def: declared }] = await runner.query(definition, [f.signature]);
      await runner.rollbackTransaction();
      expect(migrated).toBe(declared);
    } finally {
      await runner.release();
    }
  });
});
