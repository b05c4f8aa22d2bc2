import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { dayStart } from '../../common/day-index.js';
import { preparedQuery } from '../../database/prepared.js';
import { ReadReplicas } from '../../database/read-replicas.js';
import type { Page } from '../../common/paging.js';
import type { TransactionView } from '../transaction.schema.js';
import { ListTransactionsQuery } from './list-transactions.query.js';
import { filteredTransactionsSql, pageStartSql, transactionPageSql, type PageStartRow, type TransactionRow } from './list-transactions.sql.js';
import { hasChainFilter } from './transaction-filters.js';
import { Inject } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config/app-config.js';
import { proceedsOf, type Commission } from '../../revenue/commission.js';
import { provenanceOf } from '../../events/provenance.js';

@QueryHandler(ListTransactionsQuery)
export class ListTransactionsHandler implements IQueryHandler<ListTransactionsQuery> {
  constructor(
    private readonly reads: ReadReplicas,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async execute(asked: ListTransactionsQuery): Promise<Page<TransactionView>> {
    // Every row is dated 0001-01-01 or later: an end at or before that holds nothing.
    if (asked.endDate && asked.endDate <= EARLIEST) return { rows: [], paging: { skip: asked.skip, limit: asked.limit, total: 0 } };
    const query = withinStorableYears(asked);
    const db = this.reads.pick();
    if (hasChainFilter(query.filters)) {
      const { count, page } = filteredTransactionsSql(query);
      const [counted] = await preparedQuery<{ total: string }>(db, count.name, count.sql, count.params);
      const paging = { skip: query.skip, limit: query.limit, total: Number(counted.total) };
      if (query.limit === 0 || query.skip >= paging.total) return { rows: [], paging };
      return {
        rows: (await preparedQuery<TransactionRow>(db, page.name, page.sql, page.params)).map((row) => toView(row, this.config.commission, query.appId)),
        paging,
      };
    }
    const located = pageStartSql(query);
    const [start] = await preparedQuery<PageStartRow>(db, located.name, located.sql, located.params);
    const paging = { skip: query.skip, limit: query.limit, total: Number(start.total ?? 0) };
    if (start.day === null || query.limit === 0) return { rows: [], paging };
    const dayBegins = dayStart(start.day);
    const from = query.startDate && query.startDate > dayBegins ? query.startDate : dayBegins;
    const page = transactionPageSql(query, from, query.skip - Number(start.before));
    const rows = await preparedQuery<TransactionRow>(db, page.name, page.sql, page.params);
    return { rows: rows.map((row) => toView(row, this.config.commission, query.appId)), paging };
  }
}

/**
 * Drops absent fields, emits both amount spellings the spec's samples use, adds the proceeds
 * of the app's commission rate for the row's store (docs/revenue.md) and the row's provenance.
 */
export function toView(row: TransactionRow, commission: Commission, appId: string): TransactionView {
  const view: Record<string, unknown> = {};
  for (const key in row) {
    const value = row[key as keyof TransactionRow];
    if (value !== null) view[key] = value;
  }
  delete view.afterFirstYear;
  delete view.stateSource;
  delete view.stateEventId;
  delete view.stateReceivedAt;
  if (row.stateSource && row.stateEventId) view.provenance = provenanceOf(row.stateSource, row.stateEventId, row.stateReceivedAt ?? null);
  if (row.amountUSD !== null) view.priceUSD = row.amountUSD;
  if (row.amountMicros !== null) view.amountMicros = view.priceMicros = Number(row.amountMicros);
  Object.assign(view, proceedsOf(commission(appId, row.platform), row));
  return view as TransactionView;
}

// Rows are dated in the years 0001-9999 (the event contract refuses others); bounds outside them,
// which the date parser reads literally (0000-01-01 included), are moved to the edge.
const EARLIEST = new Date('0001-01-01T00:00:00.000Z');
const LATEST = new Date('9999-12-31T23:59:59.999Z');
const clamp = (d: Date | undefined) => (d === undefined ? undefined : d < EARLIEST ? EARLIEST : d > LATEST ? LATEST : d);

function withinStorableYears(q: ListTransactionsQuery): ListTransactionsQuery {
  const start = clamp(q.startDate);
  const end = clamp(q.endDate);
  if (start === q.startDate && end === q.endDate) return q;
  return new ListTransactionsQuery(q.appId, q.skip, q.limit, start, end, q.filters);
}
