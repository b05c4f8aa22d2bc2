import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString } from 'class-validator';
import { feedCursor } from '../../change-feed/feed-request.js';
import { CHANGED_AFTER_DOC, PagingRequest } from '../../common/paging.js';
import { validateRequest } from '../../common/validate-request.js';
import { MAX_USERNAMES, parseApplicationUsernames } from './application-usernames.js';

export class ListCustomersRequest extends PagingRequest {
  @ApiPropertyOptional({
    description: `Comma-separated, URL-encoded usernames (at most ${MAX_USERNAMES}); when given, skip and limit are ignored`,
    type: 'string',
    example: 'alice,doe%2C%20john',
  })
  @IsOptional()
  @IsString({ each: true })
  applicationUsername?: string | string[];

  @ApiPropertyOptional(CHANGED_AFTER_DOC)
  @IsOptional()
  @IsString({ message: 'changedAfter must be given once' })
  changedAfter?: string;
}

export type ParsedListCustomers =
  | { kind: 'page'; skip: number; limit: number }
  | { kind: 'usernames'; usernames: string[] }
  | { kind: 'changes'; after: string; limit: number };

/** The username list is read from the raw query string, because decoding must follow the split. */
export function parseListCustomersRequest(query: Record<string, unknown>, rawQuery: string): ParsedListCustomers {
  const after = feedCursor(query, ['skip', 'applicationUsername']);
  if (after !== undefined) return { kind: 'changes', after, limit: validateRequest(ListCustomersRequest, query).limit };
  const usernames = parseApplicationUsernames(rawQuery);
  if (usernames) {
    // skip and limit are disregarded with a name list; only unknown parameters are still refused.
    const { skip: _skip, limit: _limit, ...rest } = query;
    validateRequest(ListCustomersRequest, rest);
    return { kind: 'usernames', usernames };
  }
  const { skip, limit } = validateRequest(ListCustomersRequest, query);
  return { kind: 'page', skip, limit };
}
