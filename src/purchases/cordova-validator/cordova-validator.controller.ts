import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { ApiBody, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { Authorize, CurrentPrincipal } from '../../auth/authorize.decorator.js';
import type { Principal } from '../../auth/scopes.js';
import { Clock } from '../../common/clock.js';
import { AppError } from '../../common/errors.js';
import { httpStatusFor } from '../../common/problem-http.js';
import { RecordPurchaseCommand } from '../record-purchase/record-purchase.handler.js';
import { parseValidatorBody, validatorFailure, validatorPending, validatorSuccess, type ValidatorAnswer } from './validator-protocol.js';

const answerSchema = {
  type: 'object',
  required: ['ok'],
  description:
    "cordova-plugin-purchase's Validator.Response.Payload: {ok: true, data: {id, latest_receipt, transaction, collection, date}} or {ok: false, status, code, message}",
  properties: {
    ok: { type: 'boolean' },
    data: { type: 'object' },
    status: { type: 'integer', description: 'ok false: the HTTP status POST /v2/purchases would have answered' },
    code: {
      type: 'integer',
      description: "ok false: the plugin's ErrorCode (6777017 verification failed, 6777007 payment invalid, 6777005 client invalid, ...)",
    },
    message: { type: 'string' },
  },
} as const;

/**
 * The receipt validator protocol cordova-plugin-purchase (iaptic's client) posts to `store.validator`,
 * over POST /v2/purchases: an app using that plugin points its validator here (docs/purchases.md).
 */
@ApiTags('purchases')
@Controller('v2/purchases/validator')
export class CordovaValidatorController {
  constructor(
    private readonly commandBus: CommandBus,
    private readonly clock: Clock,
  ) {}

  @Post()
  @HttpCode(200)
  @Authorize('purchases:write')
  @ApiOperation({
    operationId: 'validateCordovaPurchase',
    summary: 'Receipt validator for cordova-plugin-purchase',
    description:
      "Set store.validator = { url: '<base>/v2/purchases/validator', headers: { Authorization: 'Bearer <a user token: short-lived, bound to the signed-in user (applicationUsername claim)>' } }. " +
      'Takes the Validator.Request.Body the plugin builds (transaction types apple-sk2, ios-appstore, android-playstore; additionalData.applicationUsername) ' +
      "and records the purchase as POST /v2/purchases does. Refusals are answered 200 with {ok: false, code, message}: the plugin reads no other status's body.",
  })
  @ApiBody({ schema: { type: 'object', description: 'Validator.Request.Body of cordova-plugin-purchase 13.x' } })
  @ApiResponse({ status: 200, description: "The verdict, in the plugin's shape", content: { 'application/json': { schema: answerSchema as object } } })
  @ApiResponse({ status: 401, description: 'Bearer token missing, invalid or expired (the plugin reports a communication error)' })
  @ApiResponse({ status: 403, description: 'No purchases:write scope' })
  async validate(@CurrentPrincipal() principal: Principal, @Body() body: unknown): Promise<ValidatorAnswer> {
    try {
      const request = parseValidatorBody(body);
      const recorded = await this.commandBus.execute(new RecordPurchaseCommand(principal, request.purchase));
      if (recorded.status === 'pending') return validatorPending(recorded);
      return validatorSuccess(request, recorded.transactions, this.clock.now());
    } catch (error) {
      if (error instanceof AppError) return validatorFailure(error, httpStatusFor(error.code).status);
      throw error;
    }
  }
}
