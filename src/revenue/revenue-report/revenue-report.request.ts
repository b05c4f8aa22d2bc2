import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString } from 'class-validator';
import { InvalidParameterError } from '../../common/errors.js';
import { parseIsoDateTime } from '../../common/iso-date.js';
import { validateRequest } from '../../common/validate-request.js';
import type { RevenueGrouping } from './revenue-report.query.js';

/** The longest period one report covers: the sums are per day, so a longer one reads more rows. */
export const MAX_REPORT_DAYS = 3_660;

export class RevenueReportRequest {
  @ApiProperty({ description: 'First UTC day counted, inclusive: `2026-10-01` (or a date-time at UTC midnight)', type: 'string', format: 'date' })
  @IsString({ message: 'startdate must be given once, as a day such as 2026-10-01' })
  startdate!: string;

  @ApiProperty({ description: 'The UTC day after the last one counted, exclusive: `2026-11-01` for October', type: 'string', format: 'date' })
  @IsString({ message: 'enddate must be given once, as a day such as 2026-11-01' })
  enddate!: string;

  @ApiPropertyOptional({ description: 'One entry per day, productId or platform, besides the totals', enum: ['day', 'product', 'platform'] })
  @IsOptional()
  @IsIn(['day', 'product', 'platform'], { message: 'groupBy must be day, product or platform' })
  groupBy?: RevenueGrouping;
}

/** A UTC day from `2026-10-01` or a date-time at a UTC midnight; the report's sums are kept per UTC day. */
function utcDay(name: string, value: string): string {
  const date = parseIsoDateTime(value);
  if (!date) throw new InvalidParameterError(name, `${name} must be a day such as 2026-10-01; got ${JSON.stringify(value.slice(0, 64))}`);
  if (date.getTime() % 86_400_000 !== 0)
    throw new InvalidParameterError(name, `${name} must fall on a UTC midnight: revenue is kept per UTC day; got ${JSON.stringify(value.slice(0, 64))}`);
  const day = date.toISOString().slice(0, 10);
  if (date.getUTCFullYear() < 1 || date.getUTCFullYear() > 9999) throw new InvalidParameterError(name, `${name} must be in the years 0001-9999`);
  return day;
}

export function parseRevenueReportRequest(query: Record<string, unknown>): { startDay: string; endDay: string; groupBy?: RevenueGrouping } {
  const request = validateRequest(RevenueReportRequest, query);
  const startDay = utcDay('startdate', request.startdate);
  const endDay = utcDay('enddate', request.enddate);
  const days = (Date.parse(endDay) - Date.parse(startDay)) / 86_400_000;
  if (days <= 0) throw new InvalidParameterError('enddate', 'enddate must be later than startdate (it is exclusive)');
  if (days > MAX_REPORT_DAYS) throw new InvalidParameterError('enddate', `a report covers at most ${MAX_REPORT_DAYS} days; ask for several`);
  return { startDay, endDay, groupBy: request.groupBy };
}
