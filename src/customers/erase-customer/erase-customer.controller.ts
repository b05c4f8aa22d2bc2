import { Controller, Delete, HttpCode, Inject, OnApplicationShutdown, Param } from '@nestjs/common';
import { ApiAcceptedResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Authorize, CurrentPrincipal } from '../../auth/authorize.decorator.js';
import type { Principal } from '../../auth/scopes.js';
import { ApiProblemResponses } from '../../common/api-problem-responses.js';
import { AppError, ErrorCode, InvalidParameterError } from '../../common/errors.js';
import { APP_CONFIG, type AppConfig } from '../../config/app-config.js';
import { LogWriter } from '../../event-log/log-writer.js';
import { eraseCustomers } from './erase-customers.js';

class ErasureLogUnavailableError extends AppError {
  readonly code = ErrorCode.EventLogUnavailable;
}

/** Same bound as the event contract's applicationUsername. */
const MAX_USERNAME_BYTES = 512;

@ApiTags('customers')
@Controller('v2/customers')
export class EraseCustomerController implements OnApplicationShutdown {
  private readonly log: LogWriter;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectDataSource() private readonly db: DataSource,
  ) {
    this.log = new LogWriter(config, db, '-erasure');
  }

  @Delete(':applicationUsername')
  @HttpCode(202)
  @Authorize('customers:erase')
  @ApiOperation({
    operationId: 'eraseCustomer',
    summary: 'Forget a customer',
    description:
      "Records a customer.erased event in the log (docs/privacy.md): once the projection applies it (normally within a second), the customer row, the receipts' " +
      'link to them and what the service holds of the username are gone on every replay; transactions stay, without owner. 202: recorded, applied asynchronously. ' +
      'Idempotent: erasing an unknown or already erased username is accepted too (the service cannot tell who it never knew from who it forgot).',
  })
  @ApiParam({ name: 'applicationUsername', description: 'The username to forget (1-512 UTF-8 bytes)' })
  @ApiAcceptedResponse({
    description: 'The erasure is recorded in the log',
    schema: {
      type: 'object',
      required: ['eventId'],
      properties: { eventId: { type: 'string', description: 'The customer.erased event id (also in the audit)' } },
    },
  })
  @ApiProblemResponses()
  async erase(@CurrentPrincipal() principal: Principal, @Param('applicationUsername') username: string): Promise<{ eventId: string }> {
    if (username.length === 0 || Buffer.byteLength(username, 'utf8') > MAX_USERNAME_BYTES || username.includes('\u0000') || !username.isWellFormed()) {
      throw new InvalidParameterError('applicationUsername', `applicationUsername must be 1-${MAX_USERNAME_BYTES} UTF-8 bytes without NUL`);
    }
    const result = await eraseCustomers(this.db, {
      appId: principal.appId,
      usernames: [username],
      subject: principal.subject,
      via: 'api',
      embeddedTopic: this.config.kafka ? undefined : this.config.eventLogTopic,
      send: (messages) => this.send(messages),
    });
    return { eventId: result.eventIds[0] };
  }

  private async send(messages: { key: string; value: Buffer }[]): Promise<void> {
    try {
      await this.log.append(messages);
    } catch (error) {
      throw new ErasureLogUnavailableError(`the event log (${this.log.store}) cannot take the erasure now; retry`, { cause: error });
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await this.log.close();
  }
}
