import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsDate, IsOptional, IsString } from 'class-validator';
import { feedCursor } from '../../change-feed/feed-request.js';
import { InvalidParameterError } from '../../common/errors.js';
import { parseIsoDateTime } from '../../common/iso-date.js';
import { CHANGED_AFTER_DOC, PagingRequest } from '../../common/paging.js';
import { validateRequest } from '../../common/validate-request.js';

const toDate = ({ value }: { value: unknown }): unknown =>
  typeof value === 'string' ? (parseIsoDateTime(value) ?? new Date(NaN)) : value;
const dateMessage = (name: string) =>
  `${name} must be an ISO 8601 date-time such as 2024-03-01T00:00:00.000Z or 2024-03-01T02:00:00+02:00`;

export class ListTransactionsRequest extends PagingRequest {
  @ApiPropertyOptional({ description: 'Inclusive lower bound on the transaction date', format: 'date-time', type: 'string' })
  @IsOptional()
  @Transform(toDate)
  @IsDate({ message: dateMessage('startdate') })
  startdate?: Date;

  @ApiPropertyOptional({ description: 'Exclusive upper bound on the transaction date', format: 'date-time', type: 'string' })
  @IsOptional()
  @Transform(toDate)
  @IsDate({ message: dateMessage('enddate') })
  enddate?: Date;

  @ApiPropertyOptional(CHANGED_AFTER_DOC)
  @IsOptional()
  @IsString({ message: 'changedAfter must be given once' })
  changedAfter?: string;
}

export type ParsedListTransactions = ListTransactionsRequest & { after?: string };

export function parseListTransactionsRequest(query: Record<string, unknown>): ParsedListTransactions {
  const after = feedCursor(query, ['skip', 'startdate', 'enddate']);
  if (after !== undefined) return Object.assign(validateRequest(ListTransactionsRequest, query), { after });
  const request = validateRequest(ListTransactionsRequest, query);
  if (request.startdate && request.enddate && request.enddate < request.startdate) {
    throw new InvalidParameterError('enddate', 'enddate must not be earlier than startdate');
  }
  return request;
}
