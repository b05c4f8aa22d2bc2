import { Controller, Get, Query } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import { RouteSchema } from '@nestjs/platform-fastify';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Authorize, CurrentPrincipal } from '../../auth/authorize.decorator.js';
import type { Principal } from '../../auth/scopes.js';
import { ApiProblemResponses } from '../../common/api-problem-responses.js';
import { schemaRef } from '../../common/openapi-document.js';
import { RevenueReportQuery } from './revenue-report.query.js';
import { RevenueReportRequest, parseRevenueReportRequest } from './revenue-report.request.js';
import { revenueReportSchema, type RevenueReport } from './revenue-report.schema.js';

@ApiTags('revenue')
@Controller('v2/revenue')
export class RevenueReportController {
  constructor(private readonly queryBus: QueryBus) {}

  @Get()
  @Authorize('transactions:read')
  @RouteSchema({ response: { 200: revenueReportSchema } })
  @ApiOperation({
    operationId: 'revenueReport',
    summary: 'What a period earned',
    description:
      'Gross, refunds and estimated proceeds in USD, and transaction counts, of the transactions charged in the UTC days [startdate, enddate), ' +
      'in total and optionally per day, product or platform. Exact sums of the rows, converted at each charge day’s exchange rate; ' +
      'rows without an amount or a rate are counted apart, never guessed (docs/revenue.md).',
  })
  @ApiOkResponse({ description: 'The totals, and the groups asked for', schema: schemaRef('RevenueReport') })
  @ApiProblemResponses()
  report(@CurrentPrincipal() principal: Principal, @Query() query: RevenueReportRequest): Promise<RevenueReport> {
    const request = parseRevenueReportRequest(query as unknown as Record<string, unknown>);
    return this.queryBus.execute(new RevenueReportQuery(principal.appId, request.startDay, request.endDay, request.groupBy));
  }
}
