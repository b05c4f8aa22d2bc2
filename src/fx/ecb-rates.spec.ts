import { strToU8, zipSync } from 'fflate';
import { formatProblem, MAX_PROBLEMS, parseEcbRates } from './ecb-rates.js';
import { MAX_RATES_FILE_BYTES, RatesFileError, ratesFileText } from './rates-file.js';

// The two layouts as the ECB writes them: every line ends with a comma, the daily file puts a space
// after each comma, the history file runs newest first and says N/A for a currency not quoted.
const HISTORY = [
  'Date,USD,JPY,ISK,GBP,',
  '2024-01-08,1.0946,158.15,N/A,0.85950,',
  '2024-01-05,1.0921,158.08,150.10,0.86145,',
  '2024-01-04,1.0953,157.93,150.30,0.86323,',
  '',
].join('\n');
const DAILY = 'Date, USD, JPY, GBP, \n5 January 2024, 1.0921, 158.08, 0.86145, \n';

const problemsOf = (text: string) => {
  const parsed = parseEcbRates(text);
  if (parsed.ok) throw new Error('expected problems, got rates');
  return parsed.problems.map(formatProblem);
};

describe('parseEcbRates', () => {
  it('reads the history file: a rate per quoted currency and day, as written, N/A left out', () => {
    expect(parseEcbRates(HISTORY)).toEqual({
      ok: true,
      layout: 'history',
      rows: [
        { currency: 'USD', day: '2024-01-08', perEur: '1.0946' },
        { currency: 'JPY', day: '2024-01-08', perEur: '158.15' },
        { currency: 'GBP', day: '2024-01-08', perEur: '0.85950' },
        { currency: 'USD', day: '2024-01-05', perEur: '1.0921' },
        { currency: 'JPY', day: '2024-01-05', perEur: '158.08' },
        { currency: 'ISK', day: '2024-01-05', perEur: '150.10' },
        { currency: 'GBP', day: '2024-01-05', perEur: '0.86145' },
        { currency: 'USD', day: '2024-01-04', perEur: '1.0953' },
        { currency: 'JPY', day: '2024-01-04', perEur: '157.93' },
        { currency: 'ISK', day: '2024-01-04', perEur: '150.30' },
        { currency: 'GBP', day: '2024-01-04', perEur: '0.86323' },
      ],
      days: 3,
      currencies: ['USD', 'JPY', 'ISK', 'GBP'],
      firstDay: '2024-01-04',
      lastDay: '2024-01-08',
    });
  });

  it('reads the daily file, its long date and the spaces after commas', () => {
    expect(parseEcbRates(DAILY)).toEqual({
      ok: true,
      layout: 'daily',
      rows: [
        { currency: 'USD', day: '2024-01-05', perEur: '1.0921' },
        { currency: 'JPY', day: '2024-01-05', perEur: '158.08' },
        { currency: 'GBP', day: '2024-01-05', perEur: '0.86145' },
      ],
      days: 1,
      currencies: ['USD', 'JPY', 'GBP'],
      firstDay: '2024-01-05',
      lastDay: '2024-01-05',
    });
    const twoDigitDay = parseEcbRates('Date, USD, \n05 January 2024, 1.0921, \n');
    expect(twoDigitDay.ok && twoDigitDay.rows).toEqual([{ currency: 'USD', day: '2024-01-05', perEur: '1.0921' }]);
  });

  it('takes CRLF line ends, a byte-order mark, no trailing comma, and oldest first', () => {
    const parsed = parseEcbRates('\uFEFFDate,USD\r\n2024-01-04,1.0953\r\n2024-01-05,1.0921\r\n');
    expect(parsed.ok && parsed.rows).toEqual([
      { currency: 'USD', day: '2024-01-04', perEur: '1.0953' },
      { currency: 'USD', day: '2024-01-05', perEur: '1.0921' },
    ]);
  });

  it('refuses a header that is not the ECB layout, naming line 1', () => {
    expect(problemsOf('')).toEqual(['line 1: unknown format: the file is empty']);
    expect(problemsOf('Day,USD,\n2024-01-05,1.0921,\n')).toEqual([
      'line 1: unknown format: the header must be "Date" followed by currency codes (the ECB\'s eurofxref-hist.csv or eurofxref.csv)',
    ]);
    expect(problemsOf('Date,\n2024-01-05,\n')).toEqual([
      'line 1: unknown format: the header must be "Date" followed by currency codes (the ECB\'s eurofxref-hist.csv or eurofxref.csv)',
    ]);
    expect(problemsOf('Date,USD,usd,\n')).toEqual(['line 1: unknown format: "usd" in the header is no currency code (three capital letters)']);
    expect(problemsOf('Date,USD,EUR,\n2024-01-05,1.0921,1,\n')).toEqual([
      'line 1: unknown format: an EUR column (rates are units of a currency per euro; EUR is the base, never a column)',
    ]);
    expect(problemsOf('Date,USD,USD,\n')).toEqual(['line 1: unknown format: USD is a column twice in the header']);
    expect(problemsOf('Date,USD,\n')).toEqual(['line 1: unknown format: a header and no rates after it']);
  });

  it('names every bad line with its reason and returns no rates', () => {
    const text = [
      'Date,USD,JPY,',
      '2024-01-10,1.0940,159.01,', // 2: fine
      '2024-01-09,1.0940,', // 3: a field short
      '09/01/2024,1.0940,159.01,', // 4: another date form
      '2024-02-30,1.0940,159.01,', // 5: no such day
      '2024-01-08,1,0940,159.01,', // 6: a decimal comma makes a field too many
      '2024-01-08,abc,159.01,', // 7
      '2024-01-07,0.0000,-158.2,', // 8: zero and negative
      '2024-01-09,1.0900,158.00,', // 9: a date going the wrong way
      '2024-01-09,1.0900,158.00,', // 10: the same day again
      '2024-01-05,,157.10,', // 11: an empty rate
      '', // 12: an empty line inside the file
      '2024-01-04,1.0953,157.93,', // 13: fine
      '',
    ].join('\n');
    expect(problemsOf(text)).toEqual([
      'line 3: unknown format: 2 fields where the header has 3',
      'line 4: unknown format: "09/01/2024" is not a date such as 2024-01-05',
      'line 5: unknown format: "2024-02-30" is not a date such as 2024-01-05',
      'line 6: unknown format: 4 fields where the header has 3',
      'line 7: unknown format: USD "abc" is not a rate (a decimal such as 1.0921, or N/A)',
      'line 8: USD 0.0000 is a negative or zero rate; JPY -158.2 is a negative or zero rate',
      'line 9: date out of order: 2024-01-09 after 2024-01-07 (dates must run newest first with no day twice)',
      'line 10: date out of order: 2024-01-09 after 2024-01-09 (dates must run newest first with no day twice)',
      'line 11: unknown format: USD "" is not a rate (a decimal such as 1.0921, or N/A)',
      'line 12: unknown format: an empty line inside the file',
    ]);
  });

  it('calls a repeated first day out of order before any direction is known', () => {
    expect(problemsOf('Date,USD,\n2024-01-05,1.0921,\n2024-01-05,1.0921,\n')).toEqual([
      'line 3: date out of order: 2024-01-05 after 2024-01-05 (dates must run one way with no day twice)',
    ]);
  });

  it('refuses daily-file dates in a history file and the other way round, and unknown month names', () => {
    expect(problemsOf('Date,USD,\n5 January 2024,1.0921,\n')).toEqual(['line 2: unknown format: "5 January 2024" is not a date such as 2024-01-05']);
    expect(problemsOf('Date, USD, \n2024-01-05, 1.0921, \n')).toEqual(['line 2: unknown format: "2024-01-05" is not a date such as 5 January 2024']);
    expect(problemsOf('Date, USD, \n5 Janvier 2024, 1.0921, \n')).toEqual(['line 2: unknown format: "5 Janvier 2024" is not a date such as 5 January 2024']);
    expect(problemsOf('Date, USD, \n31 April 2024, 1.0921, \n')).toEqual(['line 2: unknown format: "31 April 2024" is not a date such as 5 January 2024']);
  });

  it('refuses a file whose every rate is N/A', () => {
    expect(problemsOf('Date,USD,\n2024-01-05,N/A,\n')).toEqual(['line 2: no rates: every one is N/A']);
  });

  it(`lists the first ${MAX_PROBLEMS} bad lines and counts the others`, () => {
    const lines = ['Date,USD,', ...Array.from({ length: 25 }, (_, i) => `2024-01-${String(31 - i).padStart(2, '0')},-1,`)];
    const parsed = parseEcbRates(lines.join('\n'));
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.problems).toHaveLength(20);
    expect(parsed.problems[0]).toEqual({ line: 2, reason: 'USD -1 is a negative or zero rate' });
    expect(parsed.problems[19]).toEqual({ line: 21, reason: 'USD -1 is a negative or zero rate' });
    expect(parsed.more).toBe(5);
  });
});

describe('ratesFileText', () => {
  it('reads a CSV as it is, and the one .csv inside an ECB-style zip', () => {
    expect(ratesFileText(strToU8(DAILY))).toBe(DAILY);
    expect(ratesFileText(zipSync({ 'eurofxref.csv': strToU8(DAILY) }))).toBe(DAILY);
    expect(ratesFileText(zipSync({ 'eurofxref-hist.csv': strToU8(HISTORY), 'README.txt': strToU8('x') }))).toBe(HISTORY);
  });

  it('refuses a zip without exactly one .csv, a broken zip, a file that is not UTF-8, and an oversized file', () => {
    expect(() => ratesFileText(zipSync({ 'a.txt': strToU8('x') }))).toThrow(
      new RatesFileError("the zip holds 0 .csv files (expected one, as the ECB's eurofxref.zip and eurofxref-hist.zip)"),
    );
    expect(() => ratesFileText(zipSync({ 'a.csv': strToU8(DAILY), 'b.csv': strToU8(DAILY) }))).toThrow(/the zip holds 2 \.csv files/);
    expect(() => ratesFileText(new Uint8Array([0x50, 0x4b, 0x03, 0x04, 1, 2, 3]))).toThrow(/^not a readable zip file: /);
    expect(() => ratesFileText(new Uint8Array([0x44, 0xff, 0xfe]))).toThrow(
      new RatesFileError('not UTF-8 text (expected the ECB reference-rate CSV, or the .zip holding it)'),
    );
    expect(() => ratesFileText(new Uint8Array(MAX_RATES_FILE_BYTES + 1))).toThrow(/^the file is over 16777216 bytes/);
  });

  it('refuses a zip entry that would unpack past the cap before unpacking it', () => {
    const big = zipSync({ 'eurofxref.csv': new Uint8Array(MAX_RATES_FILE_BYTES + 1) }, { level: 9 });
    expect(big.length).toBeLessThan(MAX_RATES_FILE_BYTES);
    expect(() => ratesFileText(big)).toThrow(new RatesFileError('eurofxref.csv unpacks to 16777217 bytes (at most 16777216)'));
  });
});
