import { InvalidParameterError } from '../common/errors.js';
import { notACursor } from './signed-cursor.js';

/**
 * A change-feed request names a position, not a slice of an ordering: skip and the filters would
 * need a scan of everything changed since the cursor, so they are refused rather than made slow.
 * Returns the cursor as sent; the query handler checks it (CursorSigner.verify), for it alone holds
 * the key and knows the listing and the application the cursor must have been issued for.
 */
export function feedCursor(query: Record<string, unknown>, refusedWith: readonly string[]): string | undefined {
  const raw = query.changedAfter;
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string') throw new InvalidParameterError('changedAfter', 'changedAfter must be given once');
  for (const name of refusedWith) {
    if (query[name] !== undefined) throw new InvalidParameterError(name, `${name} cannot be combined with changedAfter`);
  }
  if (raw === '') throw notACursor();
  return raw;
}
