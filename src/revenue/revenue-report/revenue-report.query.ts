import { Query } from '@nestjs/cqrs';
import type { RevenueReport } from './revenue-report.schema.js';

export type RevenueGrouping = 'day' | 'product' | 'platform';

export class RevenueReportQuery extends Query<RevenueReport> {
  constructor(
    readonly appId: string,
    /** A UTC day, YYYY-MM-DD, inclusive. */
    readonly startDay: string,
    /** A UTC day, YYYY-MM-DD, exclusive. */
    readonly endDay: string,
    readonly groupBy?: RevenueGrouping,
  ) {
    super();
  }
}
