import { Inject, type OnModuleInit } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config/app-config.js';
import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { readFeedPage, type Feed } from '../../change-feed/feed-page.js';
import { cursorSigner, type CursorSigner } from '../../change-feed/signed-cursor.js';
import type { Page } from '../../common/paging.js';
import { ReadReplicas } from '../../database/read-replicas.js';
import { toView } from '../list-transactions/list-transactions.handler.js';
import { TRANSACTION_COLUMNS, type TransactionRow } from '../list-transactions/list-transactions.sql.js';
import type { TransactionView } from '../transaction.schema.js';
import { ListTransactionChangesQuery } from './list-transaction-changes.query.js';
import { transactionTotalSql } from './list-transaction-changes.sql.js';

const TRANSACTIONS_FEED: Feed = { table: 'transactions', columns: TRANSACTION_COLUMNS, totalSql: transactionTotalSql };

@QueryHandler(ListTransactionChangesQuery)
export class ListTransactionChangesHandler implements IQueryHandler<ListTransactionChangesQuery>, OnModuleInit {
  private cursors!: CursorSigner;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly reads: ReadReplicas,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  // The key is read on the primary; replicas hold the same one (replicated).
  async onModuleInit(): Promise<void> {
    this.cursors = await cursorSigner(this.db);
  }

  async execute(query: ListTransactionChangesQuery): Promise<Page<TransactionView>> {
    const { page, total, next } = await readFeedPage<TransactionRow>(this.reads.pick(), this.cursors, TRANSACTIONS_FEED, query.appId, query.after, query.limit);
    const rows = page.rows.map((row, i) =>
      page.deleted[i] ? transactionDeletionEntry(page.positions[i].key) : toView(row, this.config.commission, query.appId),
    );
    return { rows, paging: { skip: 0, limit: query.limit, total, next } };
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
