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
  Pick<TransactionRow, 'app_id' | 'version_time' | 'version_id'> & {
    receipt_id: string | null;
    /** t: transaction.updated, l: receipt.linked, e: customer.erased by hash (in application_username), n: by name. */
    kind: 't' | 'l' | 'e' | 'n';
    application_username: string | null;
    log_partition: number;
    log_offset: string;
  };

/** COPY's text format: NULL is \N; backslash, tab, newline and carriage return are escaped. */
const field = (v: unknown): string => {
  if (v === null || v === undefined) return '\\N';
  if (typeof v === 'boolean') return v ? 't' : 'f';
  if (typeof v === 'number') return String(v);
  const s = String(v);
  return /[\\\t\n\r]/.test(s) ? s.replace(/[\\\t\n\r]/g, (c) => ({ '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' })[c]!) : s;
};

/** One staged row as a line of COPY text, in STAGED_COLUMNS order. */
const line = (row: StagedRow): string => {
  let out = field(row[STAGED_COLUMNS[0]]);
  for (let i = 1; i < STAGED_COLUMNS.length; i++) out += '\t' + field(row[STAGED_COLUMNS[i] as keyof StagedRow]);
  return out + '\n';
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
      case 'transaction.updated': {
        // the fresh row image gains the staging columns in place: a spread would copy its 36 fields
        const image = transactionRow(event.appId, event.data, version, event);
        row = Object.assign(image, {
          kind: 't' as const,
          application_username: event.data.applicationUsername ?? null,
          log_partition: partition,
          log_offset: offset,
        });
        break;
      }
      case 'receipt.linked':
        row = {
          app_id: event.appId,
          receipt_id: event.data.receiptId,
          application_username: event.data.applicationUsername,
          kind: 'l',
          ...version,
          log_partition: partition,
          log_offset: offset,
        };
        break;
      case 'customer.erased': {
        const byHash = event.data.usernameHash !== undefined;
        row = {
          app_id: event.appId,
          receipt_id: null,
          application_username: byHash ? event.data.usernameHash! : event.data.applicationUsername!,
          kind: byHash ? 'e' : 'n',
          ...version,
          log_partition: partition,
          log_offset: offset,
        };
        break;
      }
      default:
        return assertNever(event);
    }
    return line(row);
  });
  // The transaction's own connection: the rows commit or roll back with the batch.
  const client = (await m.queryRunner!.connect()) as pg.PoolClient;
  // One chunk: a write per line costs a syscall each (a third of staging's CPU in a profile).
  await pipeline(Readable.from([lines.join('')]), client.query(copyStreams.from(bulkSql(schema).copyStaged)));
}
