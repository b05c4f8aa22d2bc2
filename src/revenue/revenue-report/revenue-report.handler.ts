import { Inject } from '@nestjs/common';
import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { APP_CONFIG, type AppConfig } from '../../config/app-config.js';
import { preparedQuery } from '../../database/prepared.js';
import { ReadReplicas } from '../../database/read-replicas.js';
import { toCents, type Commission } from '../commission.js';
import { RevenueReportQuery } from './revenue-report.query.js';
import type { RevenueFigures, RevenueReport } from './revenue-report.schema.js';
import { revenueReportSql, type RevenuePartRow } from './revenue-report.sql.js';

@QueryHandler(RevenueReportQuery)
export class RevenueReportHandler implements IQueryHandler<RevenueReportQuery> {
  constructor(
    private readonly reads: ReadReplicas,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async execute(query: RevenueReportQuery): Promise<RevenueReport> {
    const statement = revenueReportSql(query);
    const parts = await preparedQuery<RevenuePartRow>(this.reads.pick(), statement.name, statement.sql, statement.params);
    return reportOf(query, parts, this.config.commission);
  }
}

type Sum = { gross: number; refunds: number; proceeds: number; transactions: number; unconverted: number; unpriced: number };

/** Adds the parts (per group, store and tier) into groups and totals; proceeds take each part's commission off. */
export function reportOf(query: RevenueReportQuery, parts: readonly RevenuePartRow[], commission: Commission): RevenueReport {
  const zero = (): Sum => ({ gross: 0, refunds: 0, proceeds: 0, transactions: 0, unconverted: 0, unpriced: 0 });
  const totals = zero();
  const groups = new Map<string, Sum>();
  for (const part of parts) {
    const rate = commission(query.appId, part.platform);
    const gross = Number(part.gross_usd);
    const refunds = Number(part.refunds_usd);
    const add = (sum: Sum) => {
      sum.gross += gross;
      sum.refunds += refunds;
      sum.proceeds += (gross - refunds) * (1 - (part.after_first_year ? rate.afterFirstYear : rate.standard));
      sum.transactions += Number(part.n);
      sum.unconverted += Number(part.unconverted);
      sum.unpriced += Number(part.unpriced);
    };
    add(totals);
    if (part.key !== null) {
      let group = groups.get(part.key);
      if (!group) groups.set(part.key, (group = zero()));
      add(group);
    }
  }
  const figures = (s: Sum): RevenueFigures => ({
    grossUSD: toCents(s.gross),
    refundsUSD: toCents(s.refunds),
    proceedsUSD: toCents(s.proceeds),
    transactions: s.transactions,
    unconverted: s.unconverted,
    unpriced: s.unpriced,
  });
  const report: RevenueReport = { startdate: query.startDay, enddate: query.endDay, totals: figures(totals) };
  if (query.groupBy) {
    report.groupBy = query.groupBy;
    report.groups = [...groups.entries()].map(([key, s]) => ({ key, ...figures(s) }));
  }
  return report;
}
