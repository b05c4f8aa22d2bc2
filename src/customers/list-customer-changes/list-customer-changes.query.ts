import { Query } from '@nestjs/cqrs';
import type { Page } from '../../common/paging.js';
import type { CustomerSummary } from '../customer.schema.js';

/** Customers changed after a cursor, in change order (docs/change-feed.md). */
export class ListCustomerChangesQuery extends Query<Page<CustomerSummary>> {
  constructor(
    readonly appId: string,
    /** changedAfter as sent: the handler checks it was issued for this listing and application. */
    readonly after: string,
    readonly limit: number,
  ) {
    super();
  }
}
