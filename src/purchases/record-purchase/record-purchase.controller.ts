import { Body, Controller, HttpCode, Post, Res } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { ApiBody, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Authorize, CurrentPrincipal } from '../../auth/authorize.decorator.js';
import type { Principal } from '../../auth/scopes.js';
import { schemaRef } from '../../common/openapi-document.js';
import { PROBLEM_CONTENT_TYPE } from '../../common/problem-http.js';
import { PURCHASE_BODY_LIMIT } from '../purchase-routes.js';
import { parsePurchaseBody } from './purchase-body.js';
import { RecordPurchaseCommand, type RecordedPurchase } from './record-purchase.handler.js';

const problem = { [PROBLEM_CONTENT_TYPE]: { schema: schemaRef('Problem') } };

export const purchaseBodySchema = {
  type: 'object',
  description: 'One purchase: exactly one of signedTransaction, transactionId, appReceipt or purchaseToken.',
  properties: {
    applicationUsername: {
      type: 'string',
      maxLength: 512,
      description: "The user the purchase is for. Required with the backend's token; with a token bound to a user, absent or that user.",
    },
    platform: { type: 'string', enum: ['apple', 'google'], description: 'Optional: the field given says which store it is' },
    signedTransaction: { type: 'string', description: 'StoreKit 2: Transaction.jwsRepresentation, verified here (no store call)' },
    transactionId: { type: 'string', description: 'Any App Store transaction id of the purchase (needs the app in APPLE_API_KEYS)' },
    appReceipt: { type: 'string', description: 'StoreKit 1: the app receipt, base64 (needs the app in APPLE_API_KEYS)' },
    purchaseToken: { type: 'string', description: 'Play Billing: Purchase.getPurchaseToken() (needs the app in GOOGLE_APPS)' },
    productId: { type: 'string', description: 'With purchaseToken, for a one-time product: its product id' },
  },
  examples: [{ applicationUsername: 'alice@example.com', signedTransaction: 'eyJhbGciOiJFUzI1NiIsIng1YyI6WyJ...' }],
} as const;

const recordedSchema = {
  type: 'object',
  required: ['status', 'customer', 'transactions', 'appAccountToken'],
  properties: {
    status: { type: 'string', enum: ['recorded'] },
    customer: schemaRef('CustomerSummary'),
    transactions: { type: 'array', items: schemaRef('Transaction'), description: "The purchase's transactions (every transaction of its subscription)" },
    appAccountToken: {
      type: 'string',
      format: 'uuid',
      description: "The user's account token: pass it to StoreKit as appAccountToken and to Play Billing as obfuscatedAccountId (docs/purchases.md)",
    },
  },
} as const;

const pendingSchema = {
  type: 'object',
  required: ['status', 'applicationUsername', 'location', 'appAccountToken'],
  properties: {
    status: { type: 'string', enum: ['pending'] },
    applicationUsername: { type: 'string' },
    location: { type: 'string', description: 'Where the customer will show the purchase' },
    appAccountToken: { type: 'string', format: 'uuid' },
  },
} as const;

@ApiTags('purchases')
@Controller('v2/purchases')
export class RecordPurchaseController {
  constructor(private readonly commandBus: CommandBus) {}

  @Post()
  @HttpCode(200)
  @Authorize('purchases:write')
  @ApiOperation({
    operationId: 'recordPurchase',
    summary: 'Record a purchase the app just made, for its user',
    description:
      "From the app (a token bound to its user, the applicationUsername claim) or the publisher's backend (its app token, naming applicationUsername). " +
      'The purchase is verified (a StoreKit 2 JWS here, anything else with the store), its events go into the log, and the answer waits for the read models ' +
      '(PURCHASE_WAIT). Handing the same purchase over twice publishes nothing new. A purchase another user owns moves to this one (PURCHASE_OWNERSHIP=transfer) ' +
      'or is refused with 409 (keep). docs/purchases.md.',
  })
  @ApiBody({ schema: purchaseBodySchema as object })
  @ApiResponse({
    status: 200,
    description: 'Recorded: the customer as the read models now show them, with the purchase',
    content: { 'application/json': { schema: recordedSchema as object } },
  })
  @ApiResponse({
    status: 202,
    description: 'In the log, not yet shown within PURCHASE_WAIT: read Location later',
    content: { 'application/json': { schema: pendingSchema as object } },
  })
  @ApiResponse({ status: 400, description: 'The body is not a purchase (`parameter` names the field)', content: problem })
  @ApiResponse({ status: 401, description: 'Bearer token missing, invalid or expired', content: problem })
  @ApiResponse({ status: 403, description: 'No purchases:write scope, or a token bound to another user than the body names', content: problem })
  @ApiResponse({ status: 409, description: 'The purchase belongs to another user and the app keeps first owners (PURCHASE_OWNERSHIP=keep)', content: problem })
  @ApiResponse({ status: 413, description: `The body is over ${PURCHASE_BODY_LIMIT} bytes`, content: problem })
  @ApiResponse({ status: 415, description: 'The body is not application/json', content: problem })
  @ApiResponse({
    status: 422,
    description: 'The purchase fails verification, the store does not know it, or the store access it needs is not configured (the detail names the setting)',
    content: problem,
  })
  @ApiResponse({ status: 503, description: 'The store or the event log cannot answer now: retry', content: problem })
  async record(@CurrentPrincipal() principal: Principal, @Body() body: unknown, @Res({ passthrough: true }) reply: FastifyReply): Promise<RecordedPurchase> {
    const recorded = await this.commandBus.execute(new RecordPurchaseCommand(principal, parsePurchaseBody(body)));
    if (recorded.status === 'pending') void reply.status(202).header('location', recorded.location);
    return recorded;
  }
}
