import { Query } from '@nestjs/cqrs';
import type { Page } from '../../common/paging.js';
import type { TransactionView } from '../transaction.schema.js';
import type { TransactionFilters } from './transaction-filters.js';

export class ListTransactionsQuery extends Query<Page<TransactionView>> {
  constructor(
    readonly appId: string,
    readonly skip: number,
    readonly limit: number,
    /** Inclusive. */
    readonly startDate?: Date,
    /** Exclusive. */
    readonly endDate?: Date,
    /** transactionId/purchaseId (a chain), productId, platform, sandbox: every one must hold. */
    readonly filters: TransactionFilters = {},
  ) {
    super();
  }
}
