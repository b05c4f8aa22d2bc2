import { dayOf, dayStart, lastDayBefore, nextDayStart } from './day-index.js';

describe('UTC day arithmetic', () => {
  it('knows which day an exclusive end bound closes', () => {
    expect(lastDayBefore(new Date('2024-03-01T00:00:00Z'))).toBe('2024-02-29');
    expect(lastDayBefore(new Date('2024-03-01T00:00:00.001Z'))).toBe('2024-03-01');
  });

  it('maps instants to UTC days and back', () => {
    expect(dayOf(new Date('2024-03-01T23:30:00-02:00'))).toBe('2024-03-02');
    expect(dayStart('2024-03-02').toISOString()).toBe('2024-03-02T00:00:00.000Z');
    expect(nextDayStart('2024-12-31').toISOString()).toBe('2025-01-01T00:00:00.000Z');
  });
});
