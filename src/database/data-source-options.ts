import type { DataSourceOptions } from 'typeorm';
import { ENTITIES } from './entities.js';
import { ReadModels1763700000000 } from './migrations/1763700000000-read-models.js';
import { Rebuilds1763800000000 } from './migrations/1763800000000-rebuilds.js';
import { CountsAndSummaries1763900000000 } from './migrations/1763900000000-counts-and-summaries.js';
import { LifecycleRules1764000000000 } from './migrations/1764000000000-lifecycle-rules.js';

export const MIGRATIONS = [ReadModels1763700000000, Rebuilds1763800000000, CountsAndSummaries1763900000000, LifecycleRules1764000000000];

export function dataSourceOptions(url: string, overrides: Partial<{ poolSize: number; applicationName: string }> = {}): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    migrationsRun: false,
    migrationsTransactionMode: 'each',
    synchronize: false,
    logging: false,
    poolSize: overrides.poolSize ?? 10,
    applicationName: overrides.applicationName ?? 'subscription-records',
    extra: { connectionTimeoutMillis: 5000 },
  };
}
