import { Logger } from '@nestjs/common';
import { checkGeneratedSecret } from '../auth/signing-keys.js';
import type { AppConfig } from '../config/app-config.js';
import { startEmbeddedPostgres, type EmbeddedHealth } from './embedded-postgres.js';

export type DatabaseServer = { url: string; mode: 'embedded' | 'external'; stop(): Promise<void>; health?(): EmbeddedHealth };

/**
 * DATABASE_URL when set, otherwise the embedded PostgreSQL under DATA_DIR: started and owned by the
 * service (`start`), only attached to by the CLI, which never starts or stops it.
 */
export async function openDatabaseServer(config: AppConfig, options: { start?: boolean } = {}): Promise<DatabaseServer> {
  // The service's other file in DATA_DIR is checked before any server starts: refused inside Nest's
  // start instead (which exits by itself), it would be a stack in the logs and an orphaned server.
  if (options.start !== false) await checkGeneratedSecret(config);
  if (config.databaseUrl) return { url: config.databaseUrl, mode: 'external', stop: async () => undefined };
  const logger = new Logger('database');
  const embedded = await startEmbeddedPostgres(config.dataDir, config.embeddedPgPort, { start: options.start ?? true, log: (m) => logger.log(m) });
  return { ...embedded, mode: 'embedded' };
}
