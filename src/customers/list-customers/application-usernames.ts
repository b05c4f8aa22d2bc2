import { InvalidParameterError } from '../../common/errors.js';

export const MAX_USERNAMES = 1000;
const PARAM = 'applicationUsername';

/**
 * Reads `applicationUsername` from the raw query string: split on literal commas first, then
 * URL-decode each part, so `doe%2C%20john` is the single user "doe, john". Repeated parameters add
 * up; empty parts are dropped; duplicates collapse. Returns undefined when the parameter is absent.
 */
export function parseApplicationUsernames(rawQuery: string): string[] | undefined {
  let found = false;
  const names = new Set<string>();
  for (const pair of rawQuery.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const key = decode(eq === -1 ? pair : pair.slice(0, eq), 'query parameter name');
    if (key !== PARAM) continue;
    found = true;
    const value = eq === -1 ? '' : pair.slice(eq + 1);
    for (const part of value.split(',')) {
      const name = decode(part, PARAM);
      // No stored username holds these (the event contract refuses them), and PostgreSQL cannot take them.
      if (name.includes('\u0000')) throw new InvalidParameterError(PARAM, `${PARAM} contains a NUL character (%00)`);
      if (name !== '') names.add(name);
    }
  }
  if (!found) return undefined;
  if (names.size === 0) throw new InvalidParameterError(PARAM, `${PARAM} must name at least one user`);
  if (names.size > MAX_USERNAMES) {
    throw new InvalidParameterError(PARAM, `${PARAM} names ${names.size} users; at most ${MAX_USERNAMES} are allowed per request`);
  }
  return [...names];
}

// Query strings are form-encoded: '+' is a space, a literal plus arrives as %2B.
function decode(part: string, what: string): string {
  try {
    return decodeURIComponent(part.replaceAll('+', ' '));
  } catch {
    throw new InvalidParameterError(PARAM, `${what} has malformed percent-encoding: "${part.slice(0, 100)}"`);
  }
}
