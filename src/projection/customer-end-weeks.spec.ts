import type { PlacedFacts } from './customer-status-days.js';
import { endWeekDeltas, endWeekOf, weekOf } from './customer-end-weeks.js';

const NO_FACTS: PlacedFacts = { expirationDate: null, productId: null, renewalIntent: null, graceFrom: null, billingRetry: false, firstSeenDay: '2026-11-27' };
const monthly: PlacedFacts = { ...NO_FACTS, expirationDate: '2026-12-27T23:30:00.000Z', productId: 'apple:monthly', renewalIntent: 'Renew' };

describe('weekOf', () => {
  it('is the Monday of the UTC week, as PostgreSQL date_trunc(week) gives it', () => {
    // 2026-11-23 was a Monday; weeks run Monday to Sunday and cross months and years
    expect(weekOf('2026-11-23')).toBe('2026-11-23');
    expect(weekOf('2026-11-27')).toBe('2026-11-23');
    expect(weekOf('2026-11-29')).toBe('2026-11-23');
    expect(weekOf('2026-11-30')).toBe('2026-11-30');
    expect(weekOf('2027-01-01')).toBe('2026-12-28');
    expect(weekOf('2024-03-01')).toBe('2024-02-26');
  });
});

describe('endWeekDeltas', () => {
  const cell = (end_day: string, first_week: string, n: number) => ({ app_id: 'a', end_day, first_week, n });

  it('a customer without an access end is not counted; its first subscription counts it at its access-end day and first-seen week', () => {
    expect(endWeekOf(NO_FACTS)).toBeUndefined();
    expect(endWeekDeltas([{ app_id: 'a', after: NO_FACTS }, { app_id: 'a', before: NO_FACTS, after: monthly }])).toEqual([cell('2026-12-27', '2026-11-23', 1)]);
  });

  it('a renewal moves the customer to its new access-end day; a change that keeps both days moves nothing', () => {
    const renewed = { ...monthly, expirationDate: '2027-01-27T23:30:00.000Z' };
    expect(endWeekDeltas([{ app_id: 'a', before: monthly, after: renewed }])).toEqual([cell('2026-12-27', '2026-11-23', -1), cell('2027-01-27', '2026-11-23', 1)]);
    expect(endWeekDeltas([{ app_id: 'a', before: monthly, after: { ...monthly, expirationDate: '2026-12-27T00:00:00.000Z', renewalIntent: 'Lapse' } }])).toEqual([]);
  });

  it('a customer found seen a week earlier moves to that week; an erased one is taken away', () => {
    expect(endWeekDeltas([{ app_id: 'a', before: monthly, after: { ...monthly, firstSeenDay: '2026-11-22' } }])).toEqual([cell('2026-12-27', '2026-11-23', -1), cell('2026-12-27', '2026-11-16', 1)]);
    expect(endWeekDeltas([{ app_id: 'a', before: monthly }, { app_id: 'b', before: NO_FACTS }])).toEqual([cell('2026-12-27', '2026-11-23', -1)]);
  });
});
