import { InvalidParameterError } from '../common/errors.js';
import { decodeCursor, type ChangeCursor } from './change-cursor.js';

/**
 * A change-feed request names a position, not a slice of an ordering: skip and the filters would
 * need a scan of everything changed since the cursor, so they are refused rather than made slow.
 */
export function feedCursor(query: Record<string, unknown>, refusedWith: readonly string[]): ChangeCursor | undefined {
  const raw = query.changedAfter;
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string') throw new InvalidParameterError('changedAfter', 'changedAfter must be given once');
  for (const name of refusedWith) {
    if (query[name] !== undefined) throw new InvalidParameterError(name, `${name} cannot be combined with changedAfter`);
  }
  return decodeCursor(raw);
}
