import type { OnModuleInit } from '@nestjs/common';
import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { onPool, readChanges } from '../../change-feed/read-changes.js';
import { cursorSigner, type CursorSigner } from '../../change-feed/signed-cursor.js';
import { Clock } from '../../common/clock.js';
import type { Page } from '../../common/paging.js';
import { preparedQuery } from '../../database/prepared.js';
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
    private readonly clock: Clock,
  ) {}

  async onModuleInit(): Promise<void> {
    this.cursors = await cursorSigner(this.db);
  }

  async execute(query: ListCustomerChangesQuery): Promise<Page<CustomerSummary>> {
    const after = this.cursors.verify('customers', query.appId, query.after);
    const [[{ total }], page] = await Promise.all([
      preparedQuery<{ total: string }>(this.db, 'customers-total', customerTotalSql, [query.appId]),
      readChanges<CustomerRow>(onPool(this.db), 'customers', CUSTOMER_COLUMNS, query.appId, after, query.limit),
    ]);
    const next = this.cursors.issue('customers', query.appId, page.last);
    return { rows: toSummaries(page.rows, this.clock.now()), paging: { skip: 0, limit: query.limit, total: Number(total), next } };
  }
}
