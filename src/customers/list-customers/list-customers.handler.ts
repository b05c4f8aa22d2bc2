import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { locatePage, type DayCount } from '../../common/day-index.js';
import type { Page } from '../../common/paging.js';
import { customerInfo } from '../customer-info.js';
import type { CustomerSummary } from '../customer.schema.js';
import { ListCustomersQuery } from './list-customers.query.js';
import { customerDaysSql, customerPageSql, customersByNameSql, type CustomerRow } from './list-customers.sql.js';

@QueryHandler(ListCustomersQuery)
export class ListCustomersHandler implements IQueryHandler<ListCustomersQuery> {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async execute(query: ListCustomersQuery): Promise<Page<CustomerSummary>> {
    if (query.usernames) {
      const { sql, params } = customersByNameSql(query);
      const rows: CustomerRow[] = await this.db.query(sql, params);
      return { rows: toSummaries(rows), paging: { skip: 0, limit: query.usernames.length, total: rows.length } };
    }
    const days: DayCount[] = await this.db.query(customerDaysSql, [query.appId]);
    const start = locatePage(days, query.skip);
    const paging = { skip: query.skip, limit: query.limit, total: start.total };
    if (start.empty || query.limit === 0) return { rows: [], paging };
    const { sql, params } = customerPageSql(query, start.from, start.offset);
    return { rows: toSummaries(await this.db.query(sql, params)), paging };
  }
}

function toSummaries(rows: CustomerRow[]): CustomerSummary[] {
  const now = new Date();
  return rows.map((row) => ({ applicationUsername: row.applicationUsername, customerInfo: customerInfo(row, now), receiptIds: row.receiptIds }));
}
