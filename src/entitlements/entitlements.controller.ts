import { Body, Controller, Delete, Get, HttpCode, Param, Put } from '@nestjs/common';
import { ApiBody, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Authorize, CurrentPrincipal } from '../auth/authorize.decorator.js';
import type { Principal } from '../auth/scopes.js';
import { ApiProblemResponses } from '../common/api-problem-responses.js';
import { byteOrder } from '../common/byte-order.js';
import { AppError, ErrorCode, InvalidParameterError } from '../common/errors.js';
import { schemaRef } from '../common/openapi-document.js';
import { PROBLEM_CONTENT_TYPE } from '../common/problem-http.js';
import {
  checkEntitlementName,
  checkProductIds,
  EntitlementDefinitionError,
  ENTITLEMENT_NAME_MAX,
  MAX_PRODUCTS_PER_ENTITLEMENT,
} from './entitlement-definition.js';
import type { EntitlementView } from './entitlement.schema.js';
import { defineEntitlement, listEntitlements, MAX_ENTITLEMENTS_PER_APP, removeEntitlement } from './entitlement-definitions.js';

class EntitlementNotFoundError extends AppError {
  readonly code = ErrorCode.NotFound;
}

const definitionBodySchema = {
  type: 'object',
  required: ['productIds'],
  properties: {
    productIds: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_PRODUCTS_PER_ENTITLEMENT,
      uniqueItems: true,
      items: { type: 'string', minLength: 3, maxLength: 512, pattern: '^[A-Za-z0-9_.-]+:.+$' },
      description: 'Every product that grants the entitlement, <platform>:<product id> as transactions show it (apple:pro_monthly, google:pro_monthly)',
    },
  },
  examples: [{ productIds: ['apple:pro_monthly', 'apple:pro_yearly', 'google:pro_monthly'] }],
} as const;

/** The refusals of the shared validation, as the API says them: 400 naming the field. */
function checked<T>(check: () => T): T {
  try {
    return check();
  } catch (error) {
    if (error instanceof EntitlementDefinitionError) throw new InvalidParameterError(error.field, error.message);
    throw error;
  }
}

function parseBody(body: unknown): string[] {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new InvalidParameterError('body', 'the body must be a JSON object such as {"productIds": ["apple:pro_monthly"]}');
  for (const key of Object.keys(body))
    // the parameter is the key's first 100 characters, like the detail: a hostile key is not echoed whole
    if (key !== 'productIds') throw new InvalidParameterError(key.slice(0, 100), `unknown field "${key.slice(0, 100)}"; known: productIds`);
  return checked(() => checkProductIds((body as { productIds?: unknown }).productIds));
}

const problem = { [PROBLEM_CONTENT_TYPE]: { schema: schemaRef('Problem') } };

@ApiTags('entitlements')
@Controller('v2/entitlements')
export class EntitlementsController {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  @Get()
  @Authorize('customers:read')
  @ApiOperation({
    operationId: 'listEntitlements',
    summary: "The application's entitlements",
    description: 'Each entitlement with the products that grant it (docs/entitlements.md), by identifier.',
  })
  @ApiOkResponse({
    description: 'Every entitlement the application defines',
    schema: { type: 'object', required: ['entitlements'], properties: { entitlements: { type: 'array', items: schemaRef('Entitlement') } } },
  })
  @ApiProblemResponses()
  async list(@CurrentPrincipal() principal: Principal): Promise<{ entitlements: EntitlementView[] }> {
    const definitions = await listEntitlements(this.db, principal.appId);
    return { entitlements: definitions.map((d) => ({ identifier: d.name, productIds: d.productIds })) };
  }

  @Put(':name')
  @Authorize('entitlements:write')
  @ApiOperation({
    operationId: 'defineEntitlement',
    summary: 'Define an entitlement, or replace its products',
    description:
      'The products listed become the ones that grant the entitlement. customerInfo.entitlements follows at once, for the whole history: ' +
      `definitions are applied when customers are read (docs/entitlements.md). At most ${MAX_ENTITLEMENTS_PER_APP} entitlements per application.`,
  })
  @ApiParam({ name: 'name', description: `The entitlement (1-${ENTITLEMENT_NAME_MAX} characters: a letter or digit, then letters, digits, _ . -)` })
  @ApiBody({ schema: definitionBodySchema as object })
  @ApiOkResponse({ description: 'The entitlement as now defined', schema: schemaRef('Entitlement') })
  @ApiResponse({ status: 400, description: 'The name or a product id is not valid (`parameter` names the field, the detail the value)', content: problem })
  @ApiResponse({ status: 401, description: 'Bearer token missing, invalid or expired', content: problem })
  @ApiResponse({ status: 403, description: 'No entitlements:write scope, or no app claim', content: problem })
  @ApiResponse({ status: 503, description: 'PostgreSQL is unavailable or too slow: retry after Retry-After seconds', content: problem })
  async define(@CurrentPrincipal() principal: Principal, @Param('name') name: string, @Body() body: unknown): Promise<EntitlementView> {
    const identifier = checked(() => checkEntitlementName(name));
    const productIds = parseBody(body);
    await defineEntitlement(this.db, principal.appId, { name: identifier, productIds }).catch((error: unknown) => {
      throw error instanceof EntitlementDefinitionError ? new InvalidParameterError(error.field, error.message) : error;
    });
    return { identifier, productIds: [...productIds].sort(byteOrder) };
  }

  @Delete(':name')
  @HttpCode(204)
  @Authorize('entitlements:write')
  @ApiOperation({
    operationId: 'removeEntitlement',
    summary: 'Remove an entitlement',
    description: 'customerInfo.entitlements no longer lists it, from the next read on. The transactions are untouched.',
  })
  @ApiParam({ name: 'name', description: 'The entitlement' })
  @ApiNoContentResponse({ description: 'Removed' })
  @ApiResponse({ status: 400, description: 'The name is not valid', content: problem })
  @ApiResponse({ status: 401, description: 'Bearer token missing, invalid or expired', content: problem })
  @ApiResponse({ status: 403, description: 'No entitlements:write scope, or no app claim', content: problem })
  @ApiResponse({ status: 404, description: 'The application defines no entitlement of that name', content: problem })
  @ApiResponse({ status: 503, description: 'PostgreSQL is unavailable or too slow: retry after Retry-After seconds', content: problem })
  async remove(@CurrentPrincipal() principal: Principal, @Param('name') name: string): Promise<void> {
    const identifier = checked(() => checkEntitlementName(name));
    if (!(await removeEntitlement(this.db, principal.appId, identifier)))
      throw new EntitlementNotFoundError(`the application defines no entitlement ${JSON.stringify(identifier)}`);
  }
}
