import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsDate, IsOptional, IsString, type ValidationArguments } from 'class-validator';
import { feedCursor } from '../../change-feed/feed-request.js';
import { InvalidParameterError } from '../../common/errors.js';
import { isoDateTimeProblem, parseIsoDateTime } from '../../common/iso-date.js';
import { CHANGED_AFTER_DOC, PagingRequest, plainPaging } from '../../common/paging.js';
import { validateRequest } from '../../common/validate-request.js';
import { MAX_ID_LENGTH, parseTransactionFilters, TRANSACTION_FILTER_PARAMETERS, type TransactionFilters } from './transaction-filters.js';

// An unparseable date stays the string sent (not a Date), so @IsDate refuses it and its message can read it.
const toDate = ({ value }: { value: unknown }): unknown => (typeof value === 'string' ? (parseIsoDateTime(value) ?? value) : value);
const dateMessage = (name: string) => (args: ValidationArguments) => isoDateTimeProblem(name, args.value);

// Examples are in the descriptions: the docs page's "Try it out" fills a parameter's `example` (and the
// first of its `examples`) into the request, and Execute untouched would send a filtered list.
export class ListTransactionsRequest extends PagingRequest {
  @ApiPropertyOptional({
    description:
      'Inclusive lower bound on the transaction date. Example: `2024-03-01T00:00:00Z`, or with an offset `2024-03-01T02:00:00%2B02:00` (+ is sent as %2B)',
    format: 'date-time',
    type: 'string',
  })
  @IsOptional()
  @Transform(toDate)
  @IsDate({ message: dateMessage('startdate') })
  startdate?: Date;

  @ApiPropertyOptional({ description: 'Exclusive upper bound on the transaction date', format: 'date-time', type: 'string' })
  @IsOptional()
  @Transform(toDate)
  @IsDate({ message: dateMessage('enddate') })
  enddate?: Date;

  @ApiPropertyOptional({
    description:
      `Any transaction id of a chain (at most ${MAX_ID_LENGTH} characters), as the rows show it: an Apple original or renewal transaction ` +
      '(apple:<transactionId>), a Google order (google:GPA.x or its renewal google:GPA.x..N); returns every row of that purchase. ' +
      'Without a prefix (2000000123456789, GPA.x..N as the stores show them) the apple: and google: ids are looked up too. Example: `apple:1000002`',
    type: 'string',
  })
  @IsOptional()
  @IsString({ message: 'transactionId must be given once' })
  transactionId?: string;

  @ApiPropertyOptional({
    description: 'Like transactionId: a purchaseId, or any transaction id of the chain; returns every row of that purchase. Example: `apple:1000001`',
    type: 'string',
  })
  @IsOptional()
  @IsString({ message: 'purchaseId must be given once' })
  purchaseId?: string;

  @ApiPropertyOptional({ description: "The row's productId. Example: `apple:pro_monthly`", type: 'string' })
  @IsOptional()
  @IsString({ message: 'productId must be given once' })
  productId?: string;

  @ApiPropertyOptional({ description: "The row's platform (an open string: apple, google, ...). Example: `apple`", type: 'string' })
  @IsOptional()
  @IsString({ message: 'platform must be given once' })
  platform?: string;

  @ApiPropertyOptional({
    description: 'true: sandbox rows only; false: every row not marked sandbox (rows whose events did not say count as production). Example: `false`',
    type: 'string',
    enum: ['true', 'false'],
  })
  @IsOptional()
  @IsString({ message: 'sandbox must be given once' })
  sandbox?: string;

  @ApiPropertyOptional(CHANGED_AFTER_DOC)
  @IsOptional()
  @IsString({ message: 'changedAfter must be given once' })
  changedAfter?: string;
}

export type ParsedListTransactions = ListTransactionsRequest & { after?: string; filters: TransactionFilters };

export function parseListTransactionsRequest(query: Record<string, unknown>): ParsedListTransactions {
  const after = feedCursor(query, ['skip', 'startdate', 'enddate', ...TRANSACTION_FILTER_PARAMETERS]);
  if (after !== undefined) return Object.assign(validateRequest(ListTransactionsRequest, query), { after, filters: {} });
  const paging = plainPaging(query);
  if (paging) return Object.assign(new ListTransactionsRequest(), paging, { filters: {} });
  const request = validateRequest(ListTransactionsRequest, query);
  if (request.startdate && request.enddate && request.enddate < request.startdate) {
    throw new InvalidParameterError('enddate', 'enddate must not be earlier than startdate');
  }
  return Object.assign(request, { filters: parseTransactionFilters(query) });
}
