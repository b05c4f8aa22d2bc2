// YYYY-MM-DD, optionally THH:mm[:ss[.fraction]] and Z or ±HH:MM / ±HHMM / ±HH.
const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)?)?$/;

/**
 * Parses an ISO 8601 date or date-time into a Date with millisecond precision (extra fraction
 * digits are truncated). Without an offset the time is read as UTC; a date alone is midnight UTC.
 * Returns undefined for anything else, including impossible calendar dates such as 2023-02-30.
 */
export function parseIsoDateTime(input: string): Date | undefined {
  const m = ISO_8601.exec(input.trim());
  if (!m) return undefined;
  const [, y, mo, d, h = '00', mi = '00', s = '00', frac = '', , sign, oh = '00', om = '00'] = m;
  const year = Number(y),
    month = Number(mo),
    day = Number(d);
  const hour = Number(h),
    minute = Number(mi),
    second = Number(s);
  const offsetHours = Number(oh),
    offsetMinutes = Number(om);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59 || offsetHours > 23 || offsetMinutes > 59) return undefined;
  const ms = Number((frac + '000').slice(0, 3));
  const offset = sign ? (sign === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes) : 0;
  // setUTCFullYear reads years 0-99 literally (Date.UTC would make 0030 into 1930).
  const utc = new Date(0);
  utc.setUTCFullYear(year, month - 1, day);
  utc.setUTCHours(hour, minute, second, ms);
  const date = new Date(utc.getTime() - offset * 60_000);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** A date-time whose offset sign is a space: `+02:00` sent unencoded, which a query string reads as ` 02:00`. */
const PLUS_AS_SPACE = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)? \d{2}(?::?\d{2})?$/;

/**
 * Why a date-time query parameter was refused. Its examples show an offset's `+` encoded, as it
 * must be sent: in a query string an unencoded `+` arrives as a space.
 */
export function isoDateTimeProblem(name: string, raw?: unknown): string {
  const example = '2024-03-01T00:00:00.000Z or 2024-03-01T02:00:00%2B02:00';
  if (typeof raw === 'string' && PLUS_AS_SPACE.test(raw.trim())) {
    return `${name} has a space before its offset: a + sent unencoded arrives as a space; send it as %2B, such as 2024-03-01T02:00:00%2B02:00`;
  }
  return `${name} must be an ISO 8601 date-time such as ${example} (a + must be sent as %2B)`;
}
