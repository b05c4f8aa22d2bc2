import { Transform } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { ApiPropertyOptional } from '@nestjs/swagger';

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1000;

/** `next` only on change-feed pages (changedAfter): the cursor to send next time. */
export type Paging = { skip: number; limit: number; total: number; next?: string };
export type Page<Row> = { rows: Row[]; paging: Paging };

/** Query strings are text: only plain decimal integers become numbers, anything else fails @IsInt. */
export const toInteger = ({ value }: { value: unknown }): unknown => (typeof value === 'string' && /^-?\d{1,15}$/.test(value) ? Number(value) : value);

export class PagingRequest {
  @ApiPropertyOptional({ description: 'Rows to skip', default: 0, minimum: 0, type: 'integer' })
  @IsOptional()
  @Transform(toInteger)
  @IsInt({ message: 'skip must be a non-negative integer' })
  @Min(0, { message: 'skip must be a non-negative integer' })
  skip: number = 0;

  @ApiPropertyOptional({ description: 'Maximum rows to return', default: DEFAULT_LIMIT, minimum: 0, maximum: MAX_LIMIT, type: 'integer' })
  @IsOptional()
  @Transform(toInteger)
  @IsInt({ message: `limit must be an integer between 0 and ${MAX_LIMIT}` })
  @Min(0, { message: `limit must be an integer between 0 and ${MAX_LIMIT}` })
  @Max(MAX_LIMIT, { message: `limit must be an integer between 0 and ${MAX_LIMIT}` })
  limit: number = DEFAULT_LIMIT;
}

const PLAIN_INTEGER = /^\d{1,15}$/;

/**
 * A query of `skip` and/or `limit` alone, each a plain decimal integer in range: most page requests.
 * Read here without class-transformer's instance and class-validator's metadata walk, which were a
 * tenth of what the framework adds to a deep page (bench/notes.md, issue 25). Anything else (another
 * parameter, a repeated one, a sign, a limit over MAX_LIMIT) is undefined: validateRequest decides
 * it, and stays the rule (paging.spec.ts holds this shortcut to it on generated queries).
 */
export function plainPaging(query: Record<string, unknown>): { skip: number; limit: number } | undefined {
  let skip = 0;
  let limit = DEFAULT_LIMIT;
  for (const key of Reflect.ownKeys(query)) {
    const value = query[key as string];
    if (typeof value !== 'string' || !PLAIN_INTEGER.test(value)) return undefined;
    if (key === 'skip') skip = Number(value);
    else if (key === 'limit') limit = Number(value);
    else return undefined;
  }
  return limit <= MAX_LIMIT ? { skip, limit } : undefined;
}

export const pagingSchema = {
  type: 'object',
  required: ['skip', 'limit', 'total'],
  properties: {
    skip: { type: 'integer' },
    limit: { type: 'integer' },
    total: { type: 'integer', description: 'Rows the listing holds for the filters given (with changedAfter: all rows of the listing)' },
    next: {
      type: 'string',
      description: 'With changedAfter only: the cursor to send as changedAfter next time (the same one when the page is empty)',
    },
  },
} as const;

/** The change-feed parameter both listings accept (docs/change-feed.md). */
export const CHANGED_AFTER_DOC = {
  description:
    'Change feed: rows changed after this cursor, in change order (0 = from the beginning; then paging.next of the previous page). ' +
    'Cannot be combined with skip or the other filters.',
  type: 'string',
  // No example: the docs page's "Try it out" fills every parameter that has one, and changedAfter
  // next to the prefilled skip is refused (400).
} as const;
