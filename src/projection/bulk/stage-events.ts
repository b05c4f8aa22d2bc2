import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import copyStreams from 'pg-copy-streams';
import type { EntityManager } from 'typeorm';
import { assertNever } from '../../common/assert-never.js';
import type { PurchaseEvent } from '../../events/purchase-event.js';
import { transactionRow, type TransactionRow } from '../project-events.js';
import { STAGED_COLUMNS, bulkSql } from './bulk-load.sql.js';

export type StagedEvent = { event: PurchaseEvent; offset: string };

type StagedRow = Partial<Omit<TransactionRow, 'app_id' | 'receipt_id' | 'version_time' | 'version_id'>> &
  Pick<TransactionRow, 'app_id' | 'receipt_id' | 'version_time' | 'version_id'> & {
    kind: 't' | 'l';
    application_username: string | null;
    log_partition: number;
    log_offset: string;
  };

/** COPY's text format: NULL is \N; backslash, tab, newline and carriage return are escaped. */
const field = (v: unknown): string => {
  if (v === null || v === undefined) return '\\N';
  if (typeof v === 'boolean') return v ? 't' : 'f';
  const s = String(v);
  return /[\\\t\n\r]/.test(s) ? s.replace(/[\\\t\n\r]/g, (c) => ({ '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' })[c]!) : s;
};

/**
 * The bulk path's per-batch write: decoded events appended to the generation's staging table with
 * COPY (PostgreSQL parses each value once, where a JSON recordset parses the document and then each
 * value), in the batch's transaction with its offset, so staging resumes where it stopped.
 */
export async function stageEvents(m: Pick<EntityManager, 'queryRunner'>, schema: string, partition: number, staged: readonly StagedEvent[]): Promise<void> {
  if (staged.length === 0) return;
  const lines = staged.map(({ event, offset }) => {
    const version = { version_time: event.time, version_id: event.id };
    let row: StagedRow;
    switch (event.type) {
      case 'transaction.updated':
        row = { ...transactionRow(event.appId, event.data, version), kind: 't', application_username: event.data.applicationUsername ?? null, log_partition: partition, log_offset: offset };
        break;
      case 'receipt.linked':
        row = { app_id: event.appId, receipt_id: event.data.receiptId, application_username: event.data.applicationUsername, kind: 'l', ...version, log_partition: partition, log_offset: offset };
        break;
      default:
        return assertNever(event);
    }
    return STAGED_COLUMNS.map((c) => field(row[c as keyof StagedRow])).join('\t') + '\n';
  });
  // The transaction's own connection: the rows commit or roll back with the batch.
  const client = (await m.queryRunner!.connect()) as pg.PoolClient;
  await pipeline(Readable.from(lines), client.query(copyStreams.from(bulkSql(schema).copyStaged)));
}
