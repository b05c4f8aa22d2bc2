import pg from 'pg';
import type { DataSource } from 'typeorm';

/** TypeORM's data source (its pool is the primary's), or a pool of its own (a read replica's, read-replicas.ts). */
export type Queryable = DataSource | pg.Pool;

/**
 * Runs a hot read as a named prepared statement on TypeORM's own pg pool: PostgreSQL plans it once
 * per connection instead of on every request (planning was a third of the database time per page).
 */
export async function preparedQuery<Row>(db: Queryable, name: string, text: string, values: unknown[]): Promise<Row[]> {
  const pool = db instanceof pg.Pool ? db : (db.driver as unknown as { master: pg.Pool }).master;
  const result = await pool.query({ name, text, values });
  return result.rows as Row[];
}
