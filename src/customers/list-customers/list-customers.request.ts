import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString } from 'class-validator';
import { feedCursor } from '../../change-feed/feed-request.js';
import { CHANGED_AFTER_DOC, PagingRequest, plainPaging } from '../../common/paging.js';
import { validateRequest } from '../../common/validate-request.js';
import { MAX_USERNAMES, parseApplicationUsernames } from './application-usernames.js';
import { FILTER_PARAMETERS, MAX_PRODUCT_ID_LENGTH, parseCustomerFilters, type CustomerFilters } from './customer-filters.js';

// Examples are in the descriptions: the docs page's "Try it out" fills a parameter's `example` (and the
// first of its `examples`) into the request, and Execute untouched would send a filtered list.
export class ListCustomersRequest extends PagingRequest {
  @ApiPropertyOptional({
    description: `Comma-separated, URL-encoded usernames (at most ${MAX_USERNAMES}); when given, skip and limit are ignored. Example: \`alice,doe%2C%20john\``,
    type: 'string',
  })
  @IsOptional()
  @IsString({ each: true })
  applicationUsername?: string | string[];

  @ApiPropertyOptional({
    description:
      'Comma-separated, any of: active (access now), grace_period (access only because of a store grace period), ' +
      'billing_retry (no access, the store still retries billing), expired (had access, lost it: lapsed, refunded, revoked), ' +
      'none (never had a subscription). Evaluated at request time like activeSubscriber; every customer is in exactly one. ' +
      'Example: `active,grace_period`',
    type: 'string',
  })
  @IsOptional()
  @IsString({ message: 'status must be given once' })
  status?: string;

  @ApiPropertyOptional({ description: "The current subscription's renewalIntent. Example: `Renew`", type: 'string', enum: ['Renew', 'Lapse'] })
  @IsOptional()
  @IsString({ message: 'renewalIntent must be given once' })
  renewalIntent?: string;

  @ApiPropertyOptional({
    description: `The product of the current subscription (at most ${MAX_PRODUCT_ID_LENGTH} characters). Example: \`apple:pro_monthly\``,
    type: 'string',
  })
  @IsOptional()
  @IsString({ message: 'productId must be given once' })
  productId?: string;

  @ApiPropertyOptional({
    description:
      'Exclusive upper bound on customerInfo.expirationDate (the access end); customers without one never match. ' +
      "Example: `2100-01-01T00:00:00Z` (an offset's + is sent as %2B: `2100-01-01T02:00:00%2B02:00`)",
    format: 'date-time',
    type: 'string',
  })
  @IsOptional()
  @IsString({ message: 'expiresBefore must be given once' })
  expiresBefore?: string;

  @ApiPropertyOptional({
    description: 'Inclusive lower bound on customerInfo.expirationDate (the access end); customers without one never match. Example: `2000-01-01T00:00:00Z`',
    format: 'date-time',
    type: 'string',
  })
  @IsOptional()
  @IsString({ message: 'expiresAfter must be given once' })
  expiresAfter?: string;

  @ApiPropertyOptional(CHANGED_AFTER_DOC)
  @IsOptional()
  @IsString({ message: 'changedAfter must be given once' })
  changedAfter?: string;
}

export type ParsedListCustomers =
  | { kind: 'page'; skip: number; limit: number; filters: CustomerFilters }
  | { kind: 'usernames'; usernames: string[]; filters: CustomerFilters }
  | { kind: 'changes'; after: string; limit: number };

/** The username list is read from the raw query string, because decoding must follow the split. */
export function parseListCustomersRequest(query: Record<string, unknown>, rawQuery: string): ParsedListCustomers {
  const after = feedCursor(query, ['skip', 'applicationUsername', ...FILTER_PARAMETERS]);
  if (after !== undefined) return { kind: 'changes', after, limit: validateRequest(ListCustomersRequest, query).limit };
  const usernames = parseApplicationUsernames(rawQuery);
  if (usernames) {
    // skip and limit are disregarded with a name list; only unknown parameters are still refused.
    const { skip: _skip, limit: _limit, ...rest } = query;
    // A lookup with no other parameter (the hot "is this user paying?" request) has nothing the
    // class validators could refuse (the names are strings, every other field is its default) and no filter.
    const keys = Reflect.ownKeys(rest);
    if (keys.length === 1 && keys[0] === 'applicationUsername' && typeof rest.applicationUsername === 'string')
      return { kind: 'usernames', usernames, filters: {} };
    validateRequest(ListCustomersRequest, rest);
    return { kind: 'usernames', usernames, filters: parseCustomerFilters(rest) };
  }
  const paging = plainPaging(query);
  if (paging) return { kind: 'page', ...paging, filters: {} };
  const { skip, limit } = validateRequest(ListCustomersRequest, query);
  return { kind: 'page', skip, limit, filters: parseCustomerFilters(query) };
}
