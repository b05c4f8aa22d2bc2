import type { OnModuleInit } from '@nestjs/common';
import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { readFeedPage, type Feed } from '../../change-feed/feed-page.js';
import { onPool } from '../../change-feed/read-changes.js';
import { cursorSigner, type CursorSigner } from '../../change-feed/signed-cursor.js';
import { Clock } from '../../common/clock.js';
import type { Page } from '../../common/paging.js';
import { ReadReplicas } from '../../database/read-replicas.js';
import type { CustomerSummary } from '../customer.schema.js';
import { addEntitlements } from '../list-customers/add-entitlements.js';
import { toSummaries } from '../list-customers/list-customers.handler.js';
import { CUSTOMER_COLUMNS, type CustomerRow } from '../list-customers/list-customers.sql.js';
import { ListCustomerChangesQuery } from './list-customer-changes.query.js';
import { customerTotalSql } from './list-customer-changes.sql.js';

const CUSTOMERS_FEED: Feed = { table: 'customers', columns: CUSTOMER_COLUMNS, totalSql: customerTotalSql };

@QueryHandler(ListCustomerChangesQuery)
export class ListCustomerChangesHandler implements IQueryHandler<ListCustomerChangesQuery>, OnModuleInit {
  private cursors!: CursorSigner;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly reads: ReadReplicas,
    private readonly clock: Clock,
  ) {}

  // The key is read on the primary; replicas hold the same one (replicated).
  async onModuleInit(): Promise<void> {
    this.cursors = await cursorSigner(this.db);
  }

  async execute(query: ListCustomerChangesQuery): Promise<Page<CustomerSummary>> {
    // one server for the page and its entitlements: another replica could be behind the page's rows
    const db = this.reads.pick();
    const { page, total, next } = await readFeedPage<CustomerRow>(db, this.cursors, CUSTOMERS_FEED, query.appId, query.after, query.limit);
    const now = this.clock.now();
    const rows = page.rows.map((row, i) => (page.deleted[i] ? deletionEntry(page.positions[i].key) : toSummaries([row], now)[0]));
    await addEntitlements(onPool(db), query.appId, rows, now);
    return { rows, paging: { skip: 0, limit: query.limit, total, next } };
  }
}

/** A change-feed deletion entry (docs/change-feed.md, "Deletions"): the key the client stores the row under, and the marker. */
export const deletionEntry = (applicationUsername: string): CustomerSummary => ({ applicationUsername, customerInfo: {}, receiptIds: [], deleted: true });
