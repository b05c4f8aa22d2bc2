import { Query } from '@nestjs/cqrs';
import type { ChangeCursor } from '../../change-feed/change-cursor.js';
import type { Page } from '../../common/paging.js';
import type { TransactionView } from '../transaction.schema.js';

/** Transactions changed after a cursor, in change order (docs/change-feed.md). */
export class ListTransactionChangesQuery extends Query<Page<TransactionView>> {
  constructor(
    readonly appId: string,
    readonly after: ChangeCursor,
    readonly limit: number,
  ) {
    super();
  }
}
