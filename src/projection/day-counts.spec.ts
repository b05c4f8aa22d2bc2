import { dayCountDeltas, sumDayDeltas, filterCellOf, filterCountDeltas, utcDay } from './day-counts.js';

describe('dayCountDeltas', () => {
  it('counts new rows on their day', () => {
    expect(
      dayCountDeltas([
        { app_id: 'a', key: 't1', day: '2024-01-02' },
        { app_id: 'a', key: 't2', day: '2024-01-02' },
        { app_id: 'b', key: 't1', day: '2024-01-01' },
      ]),
    ).toEqual([
      { app_id: 'a', day: '2024-01-02', n: 2 },
      { app_id: 'b', day: '2024-01-01', n: 1 },
    ]);
  });

  it('moves a row whose date moved to another day, earlier or later, and ignores same-day moves', () => {
    expect(
      dayCountDeltas([
        { app_id: 'a', key: 't1', day: '2024-01-01', previousDay: '2024-01-05' },
        { app_id: 'a', key: 't2', day: '2024-01-09', previousDay: '2024-01-05' },
        { app_id: 'a', key: 't3', day: '2024-01-05', previousDay: '2024-01-05' },
      ]),
    ).toEqual([
      { app_id: 'a', day: '2024-01-01', n: 1 },
      { app_id: 'a', day: '2024-01-05', n: -2 },
      { app_id: 'a', day: '2024-01-09', n: 1 },
    ]);
  });

  it('reads UTC days from event times and Dates', () => {
    expect(utcDay('2024-03-01T23:59:59.999999Z')).toBe('2024-03-01');
    expect(utcDay(new Date('2024-03-01T23:30:00-02:00'))).toBe('2024-03-02');
  });
});

describe('filterCountDeltas', () => {
  const cell = (day: string, product_id = 'apple:monthly', sandbox = false, platform = 'apple') => ({ day, product_id, platform, sandbox });

  it('counts new rows in their cell, and a rewritten row moves only when its day or a filtered value changed', () => {
    const byKey = (d: { app_id: string; product_id: string; sandbox: boolean; day: string }) => `${d.app_id} ${d.product_id} ${d.sandbox} ${d.day}`;
    const deltas = (rows: Parameters<typeof filterCountDeltas>[0]) => filterCountDeltas(rows).sort((a, b) => byKey(a).localeCompare(byKey(b)));
    expect(
      deltas([
        { app_id: 'a', cell: cell('2024-01-02') },
        { app_id: 'a', cell: cell('2024-01-02') },
        { app_id: 'a', cell: cell('2024-01-02', 'apple:yearly'), previous: cell('2024-01-02') },
        { app_id: 'a', cell: cell('2024-01-03', 'apple:monthly', true), previous: cell('2024-01-03') },
        { app_id: 'a', cell: cell('2024-01-04'), previous: cell('2024-01-04') },
        { app_id: 'b', cell: cell('2024-01-01', 'google:monthly', false, 'google') },
      ]),
    ).toEqual([
      { app_id: 'a', ...cell('2024-01-02'), n: 1 },
      { app_id: 'a', ...cell('2024-01-03'), n: -1 },
      { app_id: 'a', ...cell('2024-01-03', 'apple:monthly', true), n: 1 },
      { app_id: 'a', ...cell('2024-01-02', 'apple:yearly'), n: 1 },
      { app_id: 'b', ...cell('2024-01-01', 'google:monthly', false, 'google'), n: 1 },
    ]);
  });

  it('counts a row whose event did not say sandbox as production, as the sandbox filter reads it', () => {
    const row = { occurred_at: '2024-03-01T23:59:59.999Z', product_id: 'apple:monthly', platform: 'apple' };
    expect(filterCellOf({ ...row, sandbox: null })).toEqual(cell('2024-03-01'));
    expect(filterCellOf({ ...row, sandbox: true })).toEqual(cell('2024-03-01', 'apple:monthly', true));
  });
});

describe('sumDayDeltas', () => {
  it('sums the filter-count changes per app and day: a move between cells of one day changes no day count', () => {
    const cell = (app_id: string, day: string, product_id: string, n: number) => ({ app_id, day, product_id, platform: 'apple', sandbox: false, n });
    expect(
      sumDayDeltas([
        cell('a', '2024-01-02', 'apple:monthly', -1),
        cell('a', '2024-01-02', 'apple:yearly', 1),
        cell('a', '2024-01-03', 'apple:monthly', 2),
        cell('a', '2024-01-01', 'apple:monthly', -1),
        cell('b', '2024-01-03', 'apple:monthly', 1),
      ]),
    ).toEqual([
      { app_id: 'a', day: '2024-01-03', n: 2 },
      { app_id: 'a', day: '2024-01-01', n: -1 },
      { app_id: 'b', day: '2024-01-03', n: 1 },
    ]);
  });
});
