import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { Clock } from '../../common/clock.js';
import { dayStart } from '../../common/day-index.js';
import { onPool } from '../../change-feed/read-changes.js';
import { preparedQuery, type Queryable } from '../../database/prepared.js';
import { ReadReplicas } from '../../database/read-replicas.js';
import type { Page } from '../../common/paging.js';
import { customerInfo } from '../customer-info.js';
import type { CustomerSummary } from '../customer.schema.js';
import { ListCustomersQuery } from './list-customers.query.js';
import { hasFilters } from './customer-filters.js';
import {
  customerPageSql,
  customerPageStartSql,
  customersByNameSql,
  filteredPageSql,
  filteredPageStartSql,
  type CustomerRow,
  type FilteredPageStartRow,
  type PageStartRow,
} from './list-customers.sql.js';
import { addEntitlements, applyEntitlements, readGrantingTransactions } from './add-entitlements.js';

@QueryHandler(ListCustomersQuery)
export class ListCustomersHandler implements IQueryHandler<ListCustomersQuery> {
  constructor(
    private readonly reads: ReadReplicas,
    private readonly clock: Clock,
  ) {}

  async execute(query: ListCustomersQuery): Promise<Page<CustomerSummary>> {
    // One instant per request: the filters and activeSubscriber agree on it.
    const now = this.clock.now();
    const db = this.reads.pick();
    if (query.usernames) {
      // the names are known before the rows: both statements at once, the lookup waits for one round trip
      const { name, sql, params } = customersByNameSql(query, now);
      const [rows, granting] = await Promise.all([
        preparedQuery<CustomerRow>(db, name, sql, params),
        readGrantingTransactions(onPool(db), query.appId, query.usernames),
      ]);
      const summaries = toSummaries(rows, now);
      applyEntitlements(summaries, granting, now);
      return { rows: summaries, paging: { skip: 0, limit: query.usernames.length, total: rows.length } };
    }
    if (hasFilters(query.filters)) {
      const start = filteredPageStartSql(query, now);
      const [found] = await preparedQuery<FilteredPageStartRow>(db, start.name, start.sql, start.params);
      const paging = { skip: query.skip, limit: query.limit, total: Number(found.total ?? 0) };
      if (found.days === null || query.limit === 0) return { rows: [], paging };
      const page = filteredPageSql(query, now, found.days, query.skip - Number(found.before));
      return { rows: await withEntitlements(db, query.appId, await preparedQuery<CustomerRow>(db, page.name, page.sql, page.params), now), paging };
    }
    const [start] = await preparedQuery<PageStartRow>(db, 'customers-page-start', customerPageStartSql, [query.appId, query.skip]);
    const paging = { skip: query.skip, limit: query.limit, total: Number(start.total ?? 0) };
    if (start.day === null || query.limit === 0) return { rows: [], paging };
    const { sql, params } = customerPageSql(query, dayStart(start.day), query.skip - Number(start.before));
    return { rows: await withEntitlements(db, query.appId, await preparedQuery<CustomerRow>(db, 'customers-page', sql, params), now), paging };
  }
}

export function toSummaries(rows: CustomerRow[], now: Date): CustomerSummary[] {
  return rows.map((row) => ({ applicationUsername: row.applicationUsername, customerInfo: customerInfo(row, now), receiptIds: row.receiptIds }));
}

/** The page's summaries with customerInfo.entitlements (addEntitlements), decided at `now`. */
async function withEntitlements(db: Queryable, appId: string, rows: CustomerRow[], now: Date): Promise<CustomerSummary[]> {
  const summaries = toSummaries(rows, now);
  await addEntitlements(onPool(db), appId, summaries, now);
  return summaries;
}
