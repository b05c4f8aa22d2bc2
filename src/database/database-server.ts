import { Logger } from '@nestjs/common';
import type { AppConfig } from '../config/app-config.js';
import { startEmbeddedPostgres } from './embedded-postgres.js';

export type DatabaseServer = { url: string; mode: 'embedded' | 'external'; stop(): Promise<void> };

/** DATABASE_URL when set, otherwise the embedded PostgreSQL under DATA_DIR. */
export async function openDatabaseServer(config: AppConfig): Promise<DatabaseServer> {
  if (config.databaseUrl) return { url: config.databaseUrl, mode: 'external', stop: async () => undefined };
  const logger = new Logger('database');
  const embedded = await startEmbeddedPostgres(config.dataDir, config.embeddedPgPort, (m) => logger.log(m));
  return { ...embedded, mode: 'embedded' };
}
