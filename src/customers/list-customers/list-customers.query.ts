import { Query } from '@nestjs/cqrs';
import type { Page } from '../../common/paging.js';
import type { CustomerSummary } from '../customer.schema.js';
import type { CustomerFilters } from './customer-filters.js';

/** Either a page (skip/limit) or a lookup by names, which ignores skip and limit. */
export class ListCustomersQuery extends Query<Page<CustomerSummary>> {
  constructor(
    readonly appId: string,
    readonly skip: number,
    readonly limit: number,
    readonly usernames?: readonly string[],
    /** status, renewalIntent, productId, expiresBefore/After: every one must hold. */
    readonly filters: CustomerFilters = {},
  ) {
    super();
  }
}
