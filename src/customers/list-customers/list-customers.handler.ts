import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Page } from '../../common/paging.js';
import { customerInfo } from '../customer-info.js';
import type { CustomerSummary } from '../customer.schema.js';
import { ListCustomersQuery } from './list-customers.query.js';
import { listCustomersSql, type CustomerPageRow } from './list-customers.sql.js';

@QueryHandler(ListCustomersQuery)
export class ListCustomersHandler implements IQueryHandler<ListCustomersQuery> {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async execute(query: ListCustomersQuery): Promise<Page<CustomerSummary>> {
    const { sql, params } = listCustomersSql(query);
    const result: CustomerPageRow[] = await this.db.query(sql, params);
    const now = new Date();
    const rows: CustomerSummary[] = [];
    for (const row of result) {
      if (row.applicationUsername === null) continue;
      rows.push({ applicationUsername: row.applicationUsername, customerInfo: customerInfo(row, now), receiptIds: row.receiptIds });
    }
    const paging = query.usernames
      ? { skip: 0, limit: query.usernames.length, total: result[0]?.total ?? 0 }
      : { skip: query.skip, limit: query.limit, total: result[0]?.total ?? 0 };
    return { rows, paging };
  }
}
