import { commissionOf, DEFAULT_COMMISSION, type Commission } from '../revenue/commission.js';
import type { DataSource, EntityManager } from 'typeorm';
import { decodeCursor, encodeCursor, type ChangeCursor } from '../change-feed/change-cursor.js';
import { readChanges, type ChangePage, type RunQuery } from '../change-feed/read-changes.js';
import { deletionEntry } from '../customers/list-customer-changes/list-customer-changes.handler.js';
import { addEntitlements } from '../customers/list-customers/add-entitlements.js';
import { toSummaries } from '../customers/list-customers/list-customers.handler.js';
import { CUSTOMER_COLUMNS, type CustomerRow } from '../customers/list-customers/list-customers.sql.js';
import { transactionDeletionEntry } from '../transactions/list-transaction-changes/list-transaction-changes.handler.js';
import { toView } from '../transactions/list-transactions/list-transactions.handler.js';
import { TRANSACTION_COLUMNS, type TransactionRow } from '../transactions/list-transactions/list-transactions.sql.js';
import { webhooksSql } from './webhooks.sql.js';

export type WebhookEventType = 'customer.updated' | 'customer.deleted' | 'transaction.updated' | 'transaction.deleted';

/**
 * A deletion from before the endpoint was registered cannot concern a row it was sent, and sending it
 * would name an erased customer (docs/change-feed.md, "Deletions"); the minute covers an erasure
 * committing just after registration while a from-start endpoint was sent the row.
 */
const DELETIONS_BEFORE_REGISTRATION_MS = 60_000;

/**
 * orderKey: the customer whose changes go one at a time (a transaction's: its receipt's owner now).
 * rowKey: the row carried; a row's deliveries go one at a time too, whichever customer they were
 * queued under (a later kind of delivery, such as a deletion, names the row it concerns).
 */
type Queued = { position: bigint; type: WebhookEventType; orderKey: string; rowKey: string; data: unknown };

/**
 * Turns what changed since each endpoint's cursors into deliveries, exactly the rows the change feed
 * shows, and moves the cursors in the same transaction: a change is queued once, whatever crashes.
 * Returns how many deliveries were queued.
 */
export async function queueChanges(
  db: DataSource,
  now: () => Date,
  pageSize = 200,
  commission: Commission = commissionOf(DEFAULT_COMMISSION),
): Promise<number> {
  const endpoints = (await db.query(webhooksSql.activeEndpoints)) as { id: string }[];
  let queued = 0;
  // One snapshot for both feed reads: read in two, a batch committing in between would show its
  // transactions without the customer summary it changed, and they would be queued out of order.
  for (const { id } of endpoints) queued += await db.transaction('REPEATABLE READ', (m) => queueForEndpoint(m, id, now, pageSize, commission));
  return queued;
}

async function queueForEndpoint(m: EntityManager, id: string, now: () => Date, pageSize: number, commission: Commission): Promise<number> {
  const [{ locked }] = (await m.query(webhooksSql.tryQueueLock, [id])) as { locked: boolean }[];
  if (!locked) return 0; // another instance is queueing for this endpoint
  const [endpoint] = (await m.query(webhooksSql.endpointCursors, [id])) as {
    app_id: string;
    customers_cursor: string;
    transactions_cursor: string;
    created_at: Date;
  }[];
  if (!endpoint) return 0;
  const run: RunQuery = (_name, sql, params) => m.query(sql, params);
  const customers = await readChanges<CustomerRow>(run, 'customers', CUSTOMER_COLUMNS, endpoint.app_id, decodeCursor(endpoint.customers_cursor), pageSize, '0');
  const transactions = await readChanges<TransactionRow>(
    run,
    'transactions',
    TRANSACTION_COLUMNS,
    endpoint.app_id,
    decodeCursor(endpoint.transactions_cursor),
    pageSize,
    '0',
  );
  if (customers.rows.length + transactions.rows.length === 0) return 0;

  // Both tables share one order (positions): a full page may stop before rows of the other table
  // that come later, so only what lies up to the earlier of the full pages' ends is queued now.
  const cut = [customers, transactions]
    .filter((page) => page.rows.length === pageSize)
    .map((page) => BigInt(page.positions.at(-1)!.position))
    .reduce<bigint | undefined>((a, b) => (a === undefined || b < a ? b : a), undefined);
  const upTo = <R>(page: ChangePage<R>) => page.positions.filter((p) => cut === undefined || BigInt(p.position) <= cut).length;
  const takeCustomers = upTo(customers);
  const takeTransactions = upTo(transactions);

  const at = now();
  const items: Queued[] = [];
  const registered = new Date(endpoint.created_at).getTime() - DELETIONS_BEFORE_REGISTRATION_MS;
  const summaries = customers.rows
    .slice(0, takeCustomers)
    .map((row, i) => (customers.deleted[i] !== undefined ? deletionEntry(customers.positions[i].key) : toSummaries([row], at)[0]));
  // in this transaction's snapshot, as the feed page itself
  await addEntitlements(run, endpoint.app_id, summaries, at);
  summaries.forEach((data, i) => {
    const { position, key } = customers.positions[i];
    const deletedAt = customers.deleted[i];
    if (deletedAt !== undefined && Date.parse(deletedAt) < registered) return;
    items.push({
      position: BigInt(position),
      type: deletedAt !== undefined ? 'customer.deleted' : 'customer.updated',
      orderKey: `customer:${key}`,
      rowKey: `customer:${key}`,
      data,
    });
  });
  const txRows = transactions.rows.slice(0, takeTransactions);
  const owners = new Map(
    (
      (await m.query(webhooksSql.receiptOwners, [endpoint.app_id, [...new Set(txRows.flatMap((t) => (t.receiptId == null ? [] : [t.receiptId])))]])) as {
        receipt_id: string;
        application_username: string;
      }[]
    ).map((r) => [r.receipt_id, r.application_username]),
  );
  txRows.forEach((row, i) => {
    const { position, key } = transactions.positions[i];
    const deletedAt = transactions.deleted[i];
    if (deletedAt !== undefined) {
      if (Date.parse(deletedAt) < registered) return;
      // The row is gone and so is its owner: ordered by its row key alone, after its earlier states.
      items.push({
        position: BigInt(position),
        type: 'transaction.deleted',
        orderKey: `transaction:${key}`,
        rowKey: `transaction:${key}`,
        data: transactionDeletionEntry(key),
      });
      return;
    }
    const owner = owners.get(row.receiptId);
    items.push({
      position: BigInt(position),
      type: 'transaction.updated',
      orderKey: owner == null ? `receipt:${row.receiptId}` : `customer:${owner}`, // null: the owner was erased
      rowKey: `transaction:${row.transactionId}`,
      data: toView(row, commission, endpoint.app_id),
    });
  });
  // Stable: at one position (one batch), a customer's summary goes before its transactions.
  items.sort((a, b) => (a.position < b.position ? -1 : a.position > b.position ? 1 : 0));

  const timestamp = at.toISOString();
  await m.query(webhooksSql.queue, [
    id,
    items.map((i) => i.type),
    items.map((i) => i.orderKey),
    items.map((i) => i.rowKey),
    items.map((i) => JSON.stringify({ type: i.type, timestamp, data: i.data })),
  ]);
  const cursorAfter = (page: ChangePage<unknown>, taken: number, previous: string): string =>
    taken === 0 ? previous : encodeCursor(page.positions[taken - 1] as ChangeCursor);
  await m.query(webhooksSql.advance, [
    id,
    cursorAfter(customers, takeCustomers, endpoint.customers_cursor),
    cursorAfter(transactions, takeTransactions, endpoint.transactions_cursor),
  ]);
  return items.length;
}
