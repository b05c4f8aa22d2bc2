import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { dayOf, lastDayBefore, locatePage, type DayCount } from '../../common/day-index.js';
import type { Page } from '../../common/paging.js';
import type { TransactionView } from '../transaction.schema.js';
import { ListTransactionsQuery } from './list-transactions.query.js';
import { transactionDaysSql, transactionPageSql, type DayCountRow, type TransactionRow } from './list-transactions.sql.js';

@QueryHandler(ListTransactionsQuery)
export class ListTransactionsHandler implements IQueryHandler<ListTransactionsQuery> {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async execute(query: ListTransactionsQuery): Promise<Page<TransactionView>> {
    const counts = transactionDaysSql(query);
    const days = exactDays(await this.db.query(counts.sql, counts.params), query);
    const start = locatePage(days, query.skip, query.startDate);
    const paging = { skip: query.skip, limit: query.limit, total: start.total };
    if (start.empty || query.limit === 0) return { rows: [], paging };
    const page = transactionPageSql(query, start.from, start.offset);
    const rows: TransactionRow[] = await this.db.query(page.sql, page.params);
    return { rows: rows.map(toView), paging };
  }
}

/** Day counts with the rows outside the filter removed from its first and last day. */
function exactDays(rows: DayCountRow[], q: ListTransactionsQuery): DayCount[] {
  const days = rows.filter((r) => r.kind === 'day').map((r) => ({ day: r.day!, n: r.n }));
  const head = rows.find((r) => r.kind === 'head')?.n ?? 0;
  const tail = rows.find((r) => r.kind === 'tail')?.n ?? 0;
  if (head > 0 && q.startDate && days[0]?.day === dayOf(q.startDate)) days[0].n -= head;
  if (tail > 0 && q.endDate && days[days.length - 1]?.day === lastDayBefore(q.endDate)) days[days.length - 1].n -= tail;
  return days;
}

/** Drops absent fields and emits both amount spellings the spec's samples use. */
export function toView(row: TransactionRow): TransactionView {
  const view: Record<string, unknown> = {};
  for (const key in row) {
    const value = row[key as keyof TransactionRow];
    if (value !== null) view[key] = value;
  }
  if (row.amountUSD !== null) view.priceUSD = row.amountUSD;
  if (row.amountMicros !== null) view.amountMicros = view.priceMicros = Number(row.amountMicros);
  return view as TransactionView;
}
