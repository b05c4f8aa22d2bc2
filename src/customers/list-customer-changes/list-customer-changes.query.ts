import { Query } from '@nestjs/cqrs';
import type { ChangeCursor } from '../../change-feed/change-cursor.js';
import type { Page } from '../../common/paging.js';
import type { CustomerSummary } from '../customer.schema.js';

/** Customers changed after a cursor, in change order (docs/change-feed.md). */
export class ListCustomerChangesQuery extends Query<Page<CustomerSummary>> {
  constructor(
    readonly appId: string,
    readonly after: ChangeCursor,
    readonly limit: number,
  ) {
    super();
  }
}
