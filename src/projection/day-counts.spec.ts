import { dayCountDeltas, utcDay } from './day-counts.js';

describe('dayCountDeltas', () => {
  it('counts new rows on their day', () => {
    expect(dayCountDeltas([
      { app_id: 'a', key: 't1', day: '2024-01-02' },
      { app_id: 'a', key: 't2', day: '2024-01-02' },
      { app_id: 'b', key: 't1', day: '2024-01-01' },
    ])).toEqual([
      { app_id: 'a', day: '2024-01-02', n: 2 },
      { app_id: 'b', day: '2024-01-01', n: 1 },
    ]);
  });

  it('moves a row whose date moved to another day, earlier or later, and ignores same-day moves', () => {
    expect(dayCountDeltas([
      { app_id: 'a', key: 't1', day: '2024-01-01', previousDay: '2024-01-05' },
      { app_id: 'a', key: 't2', day: '2024-01-09', previousDay: '2024-01-05' },
      { app_id: 'a', key: 't3', day: '2024-01-05', previousDay: '2024-01-05' },
    ])).toEqual([
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
