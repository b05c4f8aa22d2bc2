import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Page } from '../../common/paging.js';
import type { TransactionView } from '../transaction.schema.js';
import { ListTransactionsQuery } from './list-transactions.query.js';
import { listTransactionsSql, type TransactionPageRow } from './list-transactions.sql.js';

@QueryHandler(ListTransactionsQuery)
export class ListTransactionsHandler implements IQueryHandler<ListTransactionsQuery> {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async execute(query: ListTransactionsQuery): Promise<Page<TransactionView>> {
    const { sql, params } = listTransactionsSql(query);
    const result: TransactionPageRow[] = await this.db.query(sql, params);
    const rows: TransactionView[] = [];
    for (const row of result) {
      if (row.transactionId !== null) rows.push(toView(row));
    }
    return { rows, paging: { skip: query.skip, limit: query.limit, total: Number(result[0]?.total ?? 0) } };
  }
}

/** Drops absent fields and emits both amount spellings the spec's samples use. */
export function toView(row: TransactionPageRow): TransactionView {
  const view: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(row)) {
    if (value !== null && key !== 'total' && key !== 'occurred_at' && key !== 'transaction_id') view[key] = value;
  }
  if (row.amountUSD !== null) view.priceUSD = row.amountUSD;
  if (row.amountMicros !== null) view.amountMicros = view.priceMicros = Number(row.amountMicros);
  return view as TransactionView;
}
