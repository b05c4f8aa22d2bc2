import { Query } from '@nestjs/cqrs';
import type { Page } from '../../common/paging.js';
import type { TransactionView } from '../transaction.schema.js';

/** Transactions changed after a cursor, in change order (docs/change-feed.md). */
export class ListTransactionChangesQuery extends Query<Page<TransactionView>> {
  constructor(
    readonly appId: string,
    /** changedAfter as sent: the handler checks it was issued for this listing and application. */
    readonly after: string,
    readonly limit: number,
  ) {
    super();
  }
}
