import type { OnModuleInit } from '@nestjs/common';
import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { onPool, readChanges } from '../../change-feed/read-changes.js';
import { cursorSigner, type CursorSigner } from '../../change-feed/signed-cursor.js';
import { feedOrigin, readUnlessPurged } from '../../change-feed/feed-deletions.js';
import type { Page } from '../../common/paging.js';
import { preparedQuery } from '../../database/prepared.js';
import { ReadReplicas } from '../../database/read-replicas.js';
import { toView } from '../list-transactions/list-transactions.handler.js';
import { TRANSACTION_COLUMNS, type TransactionRow } from '../list-transactions/list-transactions.sql.js';
import type { TransactionView } from '../transaction.schema.js';
import { ListTransactionChangesQuery } from './list-transaction-changes.query.js';
import { transactionTotalSql } from './list-transaction-changes.sql.js';

@QueryHandler(ListTransactionChangesQuery)
export class ListTransactionChangesHandler implements IQueryHandler<ListTransactionChangesQuery>, OnModuleInit {
  private cursors!: CursorSigner;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly reads: ReadReplicas,
  ) {}

  // The key is read on the primary; replicas hold the same one (replicated).
  async onModuleInit(): Promise<void> {
    this.cursors = await cursorSigner(this.db);
  }

  async execute(query: ListTransactionChangesQuery): Promise<Page<TransactionView>> {
    const after = this.cursors.verify('transactions', query.appId, query.after);
    const db = this.reads.pick();
    const origin = await feedOrigin(db, query.after, after);
    const [[{ total }], page] = await readUnlessPurged(db, query.after, after, () =>
      Promise.all([
        preparedQuery<{ total: string }>(db, 'transactions-total', transactionTotalSql, [query.appId]),
        readChanges<TransactionRow>(onPool(db), 'transactions', TRANSACTION_COLUMNS, query.appId, after, query.limit, origin ?? '0'),
      ]),
    );
    const next = this.cursors.issue('transactions', query.appId, { ...page.last, origin });
    const rows = page.rows.map((row, i) => (page.deleted[i] ? transactionDeletionEntry(page.positions[i].key) : toView(row)));
    return { rows, paging: { skip: 0, limit: query.limit, total: Number(total), next } };
  }
}

/**
 * A transactions-feed deletion entry (docs/change-feed.md, "Deletions"): a row a rebuild dropped.
 * The key the client stores it under and the marker; the other required fields are empty (the row is
 * gone; its platform is its id's prefix), so a client that does not know the marker yet stores an
 * empty row instead of failing.
 */
export const transactionDeletionEntry = (transactionId: string): TransactionView => ({
  transactionId,
  purchaseId: '',
  productId: '',
  platform: transactionId.slice(0, Math.max(0, transactionId.indexOf(':'))),
  receiptId: '',
  deleted: true,
});
