// The European Central Bank's euro reference-rate CSV files (docs/exchange-rates.md), parsed without
// touching anything: a file is loaded whole or not at all, so every bad line is found before a write.
//
// Two layouts, told apart by the header:
// - history (eurofxref-hist.csv): `Date,USD,JPY,...,` then `2024-01-05,1.0921,158.08,...,`, newest
//   first, `N/A` where a currency was not quoted that day;
// - daily (eurofxref.csv): `Date, USD, JPY, ..., ` then `5 January 2024, 1.0921, 158.08, ..., `.
// Both end every line with a comma (an empty last field), which is dropped when present.

/** One rate as the ECB publishes it: units of `currency` per euro on `day`, the decimal as written. */
export type FxRate = { currency: string; day: string; perEur: string };

export type RatesFileProblem = { line: number; reason: string };

export type ParsedRates =
  /** `days`: the days with at least one rate; `currencies`: those quoted at least once, in the header's order. */
  | { ok: true; layout: 'history' | 'daily'; rows: FxRate[]; days: number; currencies: string[]; firstDay: string; lastDay: string }
  /** `problems` holds the first MAX_PROBLEMS bad lines in file order; `more` counts the rest. */
  | { ok: false; problems: RatesFileProblem[]; more: number };

/** Bad lines listed by name; the rest are counted (a wholly wrong file would otherwise print thousands). */
export const MAX_PROBLEMS = 20;

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const ISO_DAY = /^(\d{4})-(\d{2})-(\d{2})$/;
const LONG_DAY = /^(\d{1,2}) ([A-Z][a-z]+) (\d{4})$/;
/** A positive decimal as the ECB writes it (no sign, no exponent, no thousands separator). */
const RATE = /^\d{1,15}(?:\.\d{1,15})?$/;
const NEGATIVE = /^-\d{1,15}(?:\.\d{1,15})?$/;
const CURRENCY = /^[A-Z]{3}$/;

/** `YYYY-MM-DD` of a calendar day that exists, or undefined. */
function isoDay(year: number, month: number, day: number): string | undefined {
  const d = new Date(Date.UTC(year, month - 1, day));
  if (d.getUTCFullYear() !== year || d.getUTCMonth() !== month - 1 || d.getUTCDate() !== day) return undefined;
  return d.toISOString().slice(0, 10);
}

function dayOf(field: string, layout: 'history' | 'daily'): string | undefined {
  if (layout === 'history') {
    const m = ISO_DAY.exec(field);
    return m ? isoDay(Number(m[1]), Number(m[2]), Number(m[3])) : undefined;
  }
  const m = LONG_DAY.exec(field);
  const month = m ? MONTHS.indexOf(m[2]) + 1 : 0;
  return m && month > 0 ? isoDay(Number(m[3]), month, Number(m[1])) : undefined;
}

/** A line's fields, trimmed, without the empty one the ECB's trailing comma leaves. */
function fieldsOf(line: string): string[] {
  const fields = line.split(',').map((f) => f.trim());
  if (fields.length > 1 && fields[fields.length - 1] === '') fields.pop();
  return fields;
}

/** What is wrong with the header, or its layout and currencies. */
function readHeader(line: string): { layout: 'history' | 'daily'; currencies: string[] } | { reason: string } {
  const fields = fieldsOf(line);
  if (fields[0] !== 'Date' || fields.length < 2)
    return { reason: 'unknown format: the header must be "Date" followed by currency codes (the ECB\'s eurofxref-hist.csv or eurofxref.csv)' };
  const currencies = fields.slice(1);
  const bad = currencies.find((c) => !CURRENCY.test(c));
  if (bad !== undefined) return { reason: `unknown format: ${JSON.stringify(bad)} in the header is no currency code (three capital letters)` };
  if (currencies.includes('EUR')) return { reason: 'unknown format: an EUR column (rates are units of a currency per euro; EUR is the base, never a column)' };
  const twice = currencies.find((c, i) => currencies.indexOf(c) !== i);
  if (twice !== undefined) return { reason: `unknown format: ${twice} is a column twice in the header` };
  // The daily file writes ", " between fields, the history file "," alone.
  return { layout: /^Date\s*,\s/.test(line) ? 'daily' : 'history', currencies };
}

/**
 * The rates of an ECB reference-rate CSV file, or every line that is wrong with its reason (the first
 * MAX_PROBLEMS, and how many more). Dates must run strictly one way through the file, newest first
 * (as ECB's history file) or oldest first: a day repeated or going back is out of order.
 */
export function parseEcbRates(text: string): ParsedRates {
  const problems: RatesFileProblem[] = [];
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  while (lines.length > 0 && lines[lines.length - 1].trim() === '') lines.pop();
  if (lines.length === 0) return { ok: false, problems: [{ line: 1, reason: 'unknown format: the file is empty' }], more: 0 };

  const header = readHeader(lines[0]);
  if ('reason' in header) return { ok: false, problems: [{ line: 1, reason: header.reason }], more: 0 };
  const { layout, currencies } = header;
  if (lines.length === 1) return { ok: false, problems: [{ line: 1, reason: 'unknown format: a header and no rates after it' }], more: 0 };

  const rows: FxRate[] = [];
  const days = new Set<string>();
  let previous: string | undefined;
  let direction: 1 | -1 | undefined;
  for (let i = 1; i < lines.length; i++) {
    const line = i + 1;
    if (lines[i].trim() === '') {
      problems.push({ line, reason: 'unknown format: an empty line inside the file' });
      continue;
    }
    const fields = fieldsOf(lines[i]);
    if (fields.length !== currencies.length + 1) {
      problems.push({ line, reason: `unknown format: ${fields.length} fields where the header has ${currencies.length + 1}` });
      continue;
    }
    const day = dayOf(fields[0], layout);
    if (day === undefined) {
      const expected = layout === 'history' ? 'a date such as 2024-01-05' : 'a date such as 5 January 2024';
      problems.push({ line, reason: `unknown format: ${JSON.stringify(fields[0])} is not ${expected}` });
      continue;
    }
    const wrong: string[] = [];
    const found: FxRate[] = [];
    fields.slice(1).forEach((value, k) => {
      const currency = currencies[k];
      if (value === 'N/A') return;
      if (RATE.test(value) && /[1-9]/.test(value)) found.push({ currency, day, perEur: value });
      else if (RATE.test(value) || NEGATIVE.test(value)) wrong.push(`${currency} ${value} is a negative or zero rate`);
      else wrong.push(`unknown format: ${currency} ${JSON.stringify(value)} is not a rate (a decimal such as 1.0921, or N/A)`);
    });
    if (previous !== undefined) {
      const step = day > previous ? 1 : day < previous ? -1 : 0;
      direction ??= step === 0 ? undefined : step;
      if (step === 0 || step !== direction)
        wrong.unshift(
          `date out of order: ${day} after ${previous} (dates must run ${direction === 1 ? 'oldest first' : direction === -1 ? 'newest first' : 'one way'} with no day twice)`,
        );
    }
    previous = day;
    if (wrong.length > 0) {
      problems.push({ line, reason: wrong.join('; ') });
      continue;
    }
    if (found.length > 0) days.add(day);
    for (const rate of found) rows.push(rate);
  }
  if (problems.length > 0) return { ok: false, problems: problems.slice(0, MAX_PROBLEMS), more: Math.max(0, problems.length - MAX_PROBLEMS) };
  if (rows.length === 0) return { ok: false, problems: [{ line: 2, reason: 'no rates: every one is N/A' }], more: 0 };
  const quoted = new Set(rows.map((r) => r.currency));
  const sorted = [...days].sort();
  return {
    ok: true,
    layout,
    rows,
    days: days.size,
    currencies: currencies.filter((c) => quoted.has(c)),
    firstDay: sorted[0],
    lastDay: sorted[sorted.length - 1],
  };
}

/** A problem as a line of output: `line 7: date out of order: ...`. */
export const formatProblem = (p: RatesFileProblem) => `line ${p.line}: ${p.reason}`;
