import { DataSource } from 'typeorm';
import type { AppConfig } from '../config/app-config.js';
import { dataSourceOptions } from './data-source-options.js';
import { openDatabaseServer, type DatabaseServer } from './database-server.js';
import { runMigrations } from './migrate.js';

export type OpenDatabase = { server: DatabaseServer; db: DataSource; close(): Promise<void> };

/**
 * For CLI commands: the configured PostgreSQL, or the embedded one the running service owns (the CLI
 * attaches and never starts or stops it), migrated, outside a Nest app.
 */
export async function openDatabase(config: AppConfig, applicationName: string): Promise<OpenDatabase> {
  const server = await openDatabaseServer(config, { start: false });
  const db = await new DataSource(dataSourceOptions(server.url, { poolSize: 6, applicationName })).initialize();
  await runMigrations(db);
  return {
    server,
    db,
    async close() {
      await db.destroy();
      await server.stop();
    },
  };
}
