const RFC3339 = /^(\d{4}-\d{2}-\d{2})[Tt](\d{2}:\d{2}:\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * Normalises an RFC 3339 timestamp to `YYYY-MM-DDTHH:MM:SS.ffffffZ` (UTC, microseconds: what
 * PostgreSQL keeps), so comparing the strings compares the instants. Undefined if unparseable.
 */
export function normalizeTime(input: string): string | undefined {
  const m = RFC3339.exec(input);
  if (!m) return undefined;
  const [, date, time, fraction = '', zone] = m;
  const ms = Date.parse(`${date}T${time}${zone === 'z' ? 'Z' : zone.toUpperCase()}`);
  if (Number.isNaN(ms)) return undefined;
  const micros = (fraction + '000000').slice(0, 6);
  return new Date(ms).toISOString().slice(0, 19) + '.' + micros + 'Z';
}
