import { Controller, Get, Query, Req } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import { RouteSchema } from '@nestjs/platform-fastify';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { Authorize, CurrentPrincipal } from '../../auth/authorize.decorator.js';
import type { Principal } from '../../auth/scopes.js';
import { ApiProblemResponses } from '../../common/api-problem-responses.js';
import { schemaRef } from '../../common/openapi-document.js';
import type { Page } from '../../common/paging.js';
import { customerPageSchema, type CustomerSummary } from '../customer.schema.js';
import { ListCustomerChangesQuery } from '../list-customer-changes/list-customer-changes.query.js';
import { ListCustomersQuery } from './list-customers.query.js';
import { ListCustomersRequest, parseListCustomersRequest } from './list-customers.request.js';

@ApiTags('customers')
@Controller('v2/customers')
export class ListCustomersController {
  constructor(private readonly queryBus: QueryBus) {}

  @Get()
  @Authorize('customers:read')
  @RouteSchema({ response: { 200: customerPageSchema } })
  @ApiOperation({
    operationId: 'listCustomers',
    summary: 'List customers',
    description:
      'Ordered by when each customer was first seen, then applicationUsername; with changedAfter, the change feed in change order (docs/change-feed.md). ' +
      'status, renewalIntent, productId, expiresBefore and expiresAfter combine (every one must hold) with each other, skip/limit and applicationUsername; ' +
      'paging.total is the exact number of customers matching them (status=active&limit=0: how many are paying).',
  })
  @ApiOkResponse({ description: 'One page of rows and where it stands', schema: schemaRef('CustomerPage') })
  @ApiProblemResponses()
  list(@CurrentPrincipal() principal: Principal, @Query() query: ListCustomersRequest, @Req() request: FastifyRequest): Promise<Page<CustomerSummary>> {
    const rawQuery = request.url.includes('?') ? request.url.slice(request.url.indexOf('?') + 1) : '';
    const parsed = parseListCustomersRequest(query as unknown as Record<string, unknown>, rawQuery);
    if (parsed.kind === 'changes') return this.queryBus.execute(new ListCustomerChangesQuery(principal.appId, parsed.after, parsed.limit));
    return this.queryBus.execute(
      parsed.kind === 'usernames'
        ? new ListCustomersQuery(principal.appId, 0, parsed.usernames.length, parsed.usernames, parsed.filters)
        : new ListCustomersQuery(principal.appId, parsed.skip, parsed.limit, undefined, parsed.filters),
    );
  }
}
