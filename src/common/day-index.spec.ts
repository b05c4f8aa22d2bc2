import { lastDayBefore, locatePage } from './day-index.js';

const days = [
  { day: '2024-01-01', n: 3 },
  { day: '2024-01-02', n: 0 },
  { day: '2024-01-05', n: 2 },
];

describe('locatePage', () => {
  it('sums the days into the exact total', () => {
    expect(locatePage(days, 0).total).toBe(5);
  });

  it('finds the day holding row `skip` and the offset inside it', () => {
    expect(locatePage(days, 0)).toMatchObject({ empty: false, from: new Date('2024-01-01T00:00:00Z'), offset: 0 });
    expect(locatePage(days, 2)).toMatchObject({ from: new Date('2024-01-01T00:00:00Z'), offset: 2 });
    expect(locatePage(days, 3)).toMatchObject({ from: new Date('2024-01-05T00:00:00Z'), offset: 0 });
    expect(locatePage(days, 4)).toMatchObject({ from: new Date('2024-01-05T00:00:00Z'), offset: 1 });
  });

  it('is empty past the last row', () => {
    expect(locatePage(days, 5)).toEqual({ total: 5, empty: true });
    expect(locatePage([], 0)).toEqual({ total: 0, empty: true });
  });

  it('starts the first day at the filter bound, not at midnight', () => {
    const bound = new Date('2024-01-01T12:00:00Z');
    expect(locatePage(days, 1, bound)).toMatchObject({ from: bound, offset: 1 });
  });

  it('knows which day an exclusive end bound closes', () => {
    expect(lastDayBefore(new Date('2024-03-01T00:00:00Z'))).toBe('2024-02-29');
    expect(lastDayBefore(new Date('2024-03-01T00:00:00.001Z'))).toBe('2024-03-01');
  });
});
