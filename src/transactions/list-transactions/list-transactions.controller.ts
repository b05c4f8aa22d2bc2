import { Controller, Get, Query } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import { RouteSchema } from '@nestjs/platform-fastify';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Authorize, CurrentPrincipal } from '../../auth/authorize.decorator.js';
import type { Principal } from '../../auth/scopes.js';
import { ApiProblemResponses } from '../../common/api-problem-responses.js';
import { schemaRef } from '../../common/openapi-document.js';
import type { Page } from '../../common/paging.js';
import { transactionPageSchema, type TransactionView } from '../transaction.schema.js';
import { ListTransactionChangesQuery } from '../list-transaction-changes/list-transaction-changes.query.js';
import { ListTransactionsQuery } from './list-transactions.query.js';
import { ListTransactionsRequest, parseListTransactionsRequest } from './list-transactions.request.js';

@ApiTags('transactions')
@Controller('v2/transactions')
export class ListTransactionsController {
  constructor(private readonly queryBus: QueryBus) {}

  @Get()
  @Authorize('transactions:read')
  @RouteSchema({ response: { 200: transactionPageSchema } })
  @ApiOperation({
    operationId: 'listTransactions',
    summary: 'List transactions',
    description:
      'Ordered by transaction date, then transactionId; with changedAfter, the change feed in change order (docs/change-feed.md). ' +
      'transactionId, purchaseId, productId, platform and sandbox combine (every one must hold) with each other, the date range and skip/limit; ' +
      'paging.total is the exact number of rows matching them.',
  })
  @ApiOkResponse({ description: 'One page of rows and where it stands', schema: schemaRef('TransactionPage') })
  @ApiProblemResponses()
  list(@CurrentPrincipal() principal: Principal, @Query() query: ListTransactionsRequest): Promise<Page<TransactionView>> {
    const request = parseListTransactionsRequest(query as unknown as Record<string, unknown>);
    if (request.after) return this.queryBus.execute(new ListTransactionChangesQuery(principal.appId, request.after, request.limit));
    return this.queryBus.execute(new ListTransactionsQuery(principal.appId, request.skip, request.limit, request.startdate, request.enddate, request.filters));
  }
}
