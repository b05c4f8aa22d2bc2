import { Query } from '@nestjs/cqrs';
import type { Page } from '../../common/paging.js';
import type { TransactionView } from '../transaction.schema.js';

export class ListTransactionsQuery extends Query<Page<TransactionView>> {
  constructor(
    readonly appId: string,
    readonly skip: number,
    readonly limit: number,
    /** Inclusive. */
    readonly startDate?: Date,
    /** Exclusive. */
    readonly endDate?: Date,
  ) {
    super();
  }
}
