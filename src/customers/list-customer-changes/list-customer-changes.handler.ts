import type { OnModuleInit } from '@nestjs/common';
import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { onPool, readChanges } from '../../change-feed/read-changes.js';
import { cursorSigner, type CursorSigner } from '../../change-feed/signed-cursor.js';
import { feedOrigin, readUnlessPurged } from '../../change-feed/feed-deletions.js';
import { Clock } from '../../common/clock.js';
import type { Page } from '../../common/paging.js';
import { preparedQuery } from '../../database/prepared.js';
import { ReadReplicas } from '../../database/read-replicas.js';
import type { CustomerSummary } from '../customer.schema.js';
import { toSummaries } from '../list-customers/list-customers.handler.js';
import { CUSTOMER_COLUMNS, type CustomerRow } from '../list-customers/list-customers.sql.js';
import { ListCustomerChangesQuery } from './list-customer-changes.query.js';
import { customerTotalSql } from './list-customer-changes.sql.js';

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
    const after = this.cursors.verify('customers', query.appId, query.after);
    const db = this.reads.pick();
    const origin = await feedOrigin(db, query.after, after);
    const [[{ total }], page] = await readUnlessPurged(db, query.after, after, () =>
      Promise.all([
        preparedQuery<{ total: string }>(db, 'customers-total', customerTotalSql, [query.appId]),
        readChanges<CustomerRow>(onPool(db), 'customers', CUSTOMER_COLUMNS, query.appId, after, query.limit, origin ?? '0'),
      ]),
    );
    const next = this.cursors.issue('customers', query.appId, { ...page.last, origin });
    const now = this.clock.now();
    const rows = page.rows.map((row, i) => (page.deleted[i] ? deletionEntry(page.positions[i].key) : toSummaries([row], now)[0]));
    return { rows, paging: { skip: 0, limit: query.limit, total: Number(total), next } };
  }
}

/** A change-feed deletion entry (docs/change-feed.md, "Deletions"): the key the client stores the row under, and the marker. */
export const deletionEntry = (applicationUsername: string): CustomerSummary => ({ applicationUsername, customerInfo: {}, receiptIds: [], deleted: true });
