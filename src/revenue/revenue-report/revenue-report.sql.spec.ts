import { RevenueReportQuery } from './revenue-report.query.js';
import { reportParts } from './revenue-report.sql.js';

describe('reportParts: whole months from the USD months, the days around them from the day sums', () => {
  const parts = (start: string, end: string, groupBy?: 'day' | 'product') => reportParts(new RevenueReportQuery('app', start, end, groupBy));

  it('whole months only', () => {
    expect(parts('2026-10-01', '2026-11-01')).toEqual({
      before: ['2026-10-01', '2026-10-01'],
      months: ['2026-10-01', '2026-11-01'],
      after: ['2026-11-01', '2026-11-01'],
    });
    expect(parts('2025-11-01', '2026-11-01')).toEqual({
      before: ['2025-11-01', '2025-11-01'],
      months: ['2025-11-01', '2026-11-01'],
      after: ['2026-11-01', '2026-11-01'],
    });
  });

  it('days before and after the whole months, across a year end', () => {
    expect(parts('2025-12-15', '2026-03-10')).toEqual({
      before: ['2025-12-15', '2026-01-01'],
      months: ['2026-01-01', '2026-03-01'],
      after: ['2026-03-01', '2026-03-10'],
    });
  });

  it('no whole month, or per day: every day from the day sums', () => {
    const none = { before: ['2026-10-05', '2026-11-20'], months: ['2026-11-20', '2026-11-20'], after: ['2026-11-20', '2026-11-20'] };
    expect(parts('2026-10-05', '2026-11-20')).toEqual(none);
    expect(parts('2026-10-01', '2026-10-31')).toEqual({
      before: ['2026-10-01', '2026-10-31'],
      months: ['2026-10-31', '2026-10-31'],
      after: ['2026-10-31', '2026-10-31'],
    });
    expect(parts('2026-10-01', '2026-11-01', 'day')).toEqual({
      before: ['2026-10-01', '2026-11-01'],
      months: ['2026-11-01', '2026-11-01'],
      after: ['2026-11-01', '2026-11-01'],
    });
  });
});
