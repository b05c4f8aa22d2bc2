import type { DataSourceOptions } from 'typeorm';
import { ENTITIES } from './entities.js';
import { ReadModels1763700000000 } from './migrations/1763700000000-read-models.js';
import { Rebuilds1763800000000 } from './migrations/1763800000000-rebuilds.js';
import { CountsAndSummaries1763900000000 } from './migrations/1763900000000-counts-and-summaries.js';
import { LifecycleRules1764000000000 } from './migrations/1764000000000-lifecycle-rules.js';
import { FaultProofing1764100000000 } from './migrations/1764100000000-fault-proofing.js';
import { ChangeFeed1764200000000 } from './migrations/1764200000000-change-feed.js';
import { Webhooks1764300000000 } from './migrations/1764300000000-webhooks.js';
import { ChangeFeedCursorKey1764400000000 } from './migrations/1764400000000-change-feed-cursor-key.js';
import { WebhookMessageIds1764520000000 } from './migrations/1764520000000-webhook-message-ids.js';
import { ReplacedTransactions1764510000000 } from './migrations/1764510000000-replaced-transactions.js';
import { ImportJournal1764600000000 } from './migrations/1764600000000-import-journal.js';
import { OffersAndOwnership1765000000000 } from './migrations/1765000000000-offers-and-ownership.js';
import { WebhookRowKeys1765100000000 } from './migrations/1765100000000-webhook-row-keys.js';
import { CustomerErasure1765200000000 } from './migrations/1765200000000-customer-erasure.js';
import { CustomerStatus1765300000000 } from './migrations/1765300000000-customer-status.js';
import { FeedDeletionsDelivered1765400000000 } from './migrations/1765400000000-feed-deletions-delivered.js';
import { CustomerKeys1765500000000 } from './migrations/1765500000000-customer-keys.js';
import { FeedDeletionsPurge1765510000000 } from './migrations/1765510000000-feed-deletions-purge.js';
import { EventIdClaimsGo1765520000000 } from './migrations/1765520000000-event-id-claims-go.js';
import { TransactionDeletionsDelivered1765600000000 } from './migrations/1765600000000-transaction-deletions-delivered.js';
import { TransactionFilterCounts1765700000000 } from './migrations/1765700000000-transaction-filter-counts.js';
import { CustomerFilterCounts1765800000000 } from './migrations/1765800000000-customer-filter-counts.js';
import { CustomerStatusDays1765900000000 } from './migrations/1765900000000-customer-status-days.js';
import { CustomerEndWeeks1766000000000 } from './migrations/1766000000000-customer-end-weeks.js';
import { StatusAtRead1766100000000 } from './migrations/1766100000000-status-at-read.js';
import { AccountTokens1766200000000 } from './migrations/1766200000000-account-tokens.js';
import { Revenue1766300000000 } from './migrations/1766300000000-revenue.js';
import { Provenance1766350000000 } from './migrations/1766350000000-provenance.js';
import { Reconcile1766400000000 } from './migrations/1766400000000-reconcile.js';
import { ReconcileSampleCursor1766410000000 } from './migrations/1766410000000-reconcile-sample-cursor.js';
import { Entitlements1766500000000 } from './migrations/1766500000000-entitlements.js';
import { EntitlementChanges1766600000000 } from './migrations/1766600000000-entitlement-changes.js';

export const MIGRATIONS = [
  ReadModels1763700000000,
  Rebuilds1763800000000,
  CountsAndSummaries1763900000000,
  LifecycleRules1764000000000,
  FaultProofing1764100000000,
  ChangeFeed1764200000000,
  Webhooks1764300000000,
  ChangeFeedCursorKey1764400000000,
  ReplacedTransactions1764510000000,
  WebhookMessageIds1764520000000,
  ImportJournal1764600000000,
  OffersAndOwnership1765000000000,
  WebhookRowKeys1765100000000,
  CustomerErasure1765200000000,
  CustomerStatus1765300000000,
  FeedDeletionsDelivered1765400000000,
  CustomerKeys1765500000000,
  FeedDeletionsPurge1765510000000,
  EventIdClaimsGo1765520000000,
  TransactionDeletionsDelivered1765600000000,
  TransactionFilterCounts1765700000000,
  CustomerFilterCounts1765800000000,
  CustomerStatusDays1765900000000,
  CustomerEndWeeks1766000000000,
  StatusAtRead1766100000000,
  AccountTokens1766200000000,
  Revenue1766300000000,
  Provenance1766350000000,
  Reconcile1766400000000,
  ReconcileSampleCursor1766410000000,
  Entitlements1766500000000,
  EntitlementChanges1766600000000,
];

/**
 * statementTimeoutMs bounds every statement on the pool (the service's API); the projection and the
 * long migrations lift it inside their own transactions (SET LOCAL statement_timeout = 0).
 */
export function dataSourceOptions(
  url: string,
  overrides: Partial<{ poolSize: number; applicationName: string; statementTimeoutMs: number }> = {},
): DataSourceOptions {
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
    extra: { connectionTimeoutMillis: 5000, ...(overrides.statementTimeoutMs ? { statement_timeout: overrides.statementTimeoutMs } : {}) },
  };
}
