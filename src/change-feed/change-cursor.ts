import { InvalidParameterError } from '../common/errors.js';

/**
 * Where a client stands in the change feed: the last row it received, in (position, key) order.
 * `origin`: the feed's high-water mark when the client began at changedAfter=0 (signed cursors only):
 * deletions below it came before the client held anything and are not shown to it.
 */
export type ChangeCursor = { position: string; key: string; origin?: string };

export const FEED_START: ChangeCursor = { position: '0', key: '' };

const WIRE = /^(\d{1,19}):([\s\S]*)$/;

/**
 * The unsigned form, for cursors the service keeps itself (webhook endpoints store theirs in
 * PostgreSQL): base64url of "position:key". Clients get and send signed cursors (signed-cursor.ts).
 */
export function encodeCursor(c: ChangeCursor): string {
  return Buffer.from(`${c.position}:${c.key}`, 'utf8').toString('base64url');
}

export function decodeCursor(text: string, parameter = 'changedAfter'): ChangeCursor {
  if (text === '0') return FEED_START;
  const decoded = /^[A-Za-z0-9_-]{1,4096}$/.test(text) ? Buffer.from(text, 'base64url').toString('utf8') : '';
  const m = WIRE.exec(decoded);
  if (!m || BigInt(m[1]) > 9_223_372_036_854_775_807n || !m[2].isWellFormed()) {
    throw new InvalidParameterError(parameter, `${parameter} must be 0 or a paging.next value from an earlier response`);
  }
  return { position: m[1], key: m[2] };
}
