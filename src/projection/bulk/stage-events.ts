import type { EntityManager } from 'typeorm';
import type { PurchaseEvent } from '../../events/purchase-event.js';
import { assertNever } from '../../common/assert-never.js';
import { transactionRow } from '../project-events.js';
import { bulkSql } from './bulk-load.sql.js';

export type StagedEvent = { event: PurchaseEvent; offset: string };

/**
 * The bulk path's per-batch write: decoded events appended to the generation's staging table, in
 * the batch's transaction with its offset, so staging resumes where it stopped like the live path.
 */
export async function stageEvents(m: Pick<EntityManager, 'query'>, schema: string, partition: number, staged: readonly StagedEvent[]): Promise<void> {
  if (staged.length === 0) return;
  const rows = staged.map(({ event, offset }) => {
    const position = { log_partition: partition, log_offset: offset };
    const version = { version_time: event.time, version_id: event.id };
    switch (event.type) {
      case 'transaction.updated':
        return { ...transactionRow(event.appId, event.data, version), kind: 't', application_username: event.data.applicationUsername ?? null, ...position };
      case 'receipt.linked':
        return { app_id: event.appId, receipt_id: event.data.receiptId, application_username: event.data.applicationUsername, kind: 'l', ...version, ...position };
      default:
        return assertNever(event);
    }
  });
  await m.query(bulkSql(schema).stage, [JSON.stringify(rows)]);
}
