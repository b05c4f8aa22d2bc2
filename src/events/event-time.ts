// Month 01-12, day 01-31, hour 00-23, minute and second 00-59; the day's fit in its month is
// checked by the JSON Schema's date-time format before this runs, and by Date.parse below.
const CANONICAL_MS = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z$/;
const CANONICAL_S = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\dZ$/;
const RFC3339 = /^(\d{4}-\d{2}-\d{2})[Tt]((?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d)(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * Normalises an RFC 3339 timestamp to `YYYY-MM-DDTHH:MM:SS.ffffffZ` (UTC, microseconds: what
 * PostgreSQL keeps), so comparing the strings compares the instants. Undefined if unparseable.
 */
export function normalizeTime(input: string): string | undefined {
  // Fast path for what producers nearly always send, UTC with milliseconds or whole seconds: the
  // normal form is a string edit (the regex and Date round trip cost ~1 µs per field).
  if (input.length === 24 && input.charCodeAt(23) === 90 /* Z */ && input.charCodeAt(19) === 46 /* . */ && CANONICAL_MS.test(input)) {
    return input.slice(0, 23) + '000Z';
  }
  if (input.length === 20 && input.charCodeAt(19) === 90 && CANONICAL_S.test(input)) return input.slice(0, 19) + '.000000Z';
  const m = RFC3339.exec(input);
  if (!m) return undefined;
  const [, date, time, fraction = '', zone] = m;
  const ms = Date.parse(`${date}T${time}${zone === 'z' ? 'Z' : zone.toUpperCase()}`);
  if (Number.isNaN(ms)) return undefined;
  const micros = (fraction + '000000').slice(0, 6);
  return new Date(ms).toISOString().slice(0, 19) + '.' + micros + 'Z';
}
