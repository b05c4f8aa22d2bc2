import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { onPool, readChanges } from '../../change-feed/read-changes.js';
import { Clock } from '../../common/clock.js';
import type { Page } from '../../common/paging.js';
import { preparedQuery } from '../../database/prepared.js';
import type { CustomerSummary } from '../customer.schema.js';
import { toSummaries } from '../list-customers/list-customers.handler.js';
import { CUSTOMER_COLUMNS, type CustomerRow } from '../list-customers/list-customers.sql.js';
import { ListCustomerChangesQuery } from './list-customer-changes.query.js';
import { customerTotalSql } from './list-customer-changes.sql.js';

@QueryHandler(ListCustomerChangesQuery)
export class ListCustomerChangesHandler implements IQueryHandler<ListCustomerChangesQuery> {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly clock: Clock,
  ) {}

  async execute(query: ListCustomerChangesQuery): Promise<Page<CustomerSummary>> {
    const [[{ total }], page] = await Promise.all([
      preparedQuery<{ total: string }>(this.db, 'customers-total', customerTotalSql, [query.appId]),
      readChanges<CustomerRow>(onPool(this.db), 'customers', CUSTOMER_COLUMNS, query.appId, query.after, query.limit),
    ]);
    return { rows: toSummaries(page.rows, this.clock.now()), paging: { skip: 0, limit: query.limit, total: Number(total), next: page.next } };
  }
}
