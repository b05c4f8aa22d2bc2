import type { PlacedFacts } from './customer-cells.js';
import { customerCellDeltas, customerCellOf, weekOf } from './customer-cells.js';

/** A customer row as inserted, before any summary is stored on it; first seen on Friday 2026-03-13. */
const NO_FACTS: PlacedFacts = { expirationDate: null, productId: null, renewalIntent: null, graceFrom: null, billingRetry: false, firstSeenDay: '2026-03-13' };

const monthly: PlacedFacts = { ...NO_FACTS, expirationDate: '2026-04-01T23:30:00.000Z', productId: 'apple:monthly', renewalIntent: 'Renew' };

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

describe('customerCellOf', () => {
  it('files a customer under the UTC days of its access end and grace start, its first-seen week, and the values the filters read', () => {
    expect(customerCellOf(monthly)).toEqual({
      end_day: '2026-04-01',
      first_week: '2026-03-09',
      product_id: 'apple:monthly',
      renewal_intent: 'Renew',
      grace_day: 'infinity',
      billing_retry: false,
    });
    expect(
      customerCellOf({
        ...monthly,
        expirationDate: '2026-04-17T00:00:00.000Z',
        graceFrom: '2026-04-01T00:00:00.000Z',
        billingRetry: true,
        firstSeenDay: '2026-03-16',
      }),
    ).toEqual({
      end_day: '2026-04-17',
      first_week: '2026-03-16',
      product_id: 'apple:monthly',
      renewal_intent: 'Renew',
      grace_day: '2026-04-01',
      billing_retry: true,
    });
  });

  it('a customer without a subscription (status none): no access end, no product or intent', () => {
    expect(customerCellOf(NO_FACTS)).toEqual({
      end_day: '-infinity',
      first_week: '2026-03-09',
      product_id: '',
      renewal_intent: '',
      grace_day: 'infinity',
      billing_retry: false,
    });
  });
});

describe('customerCellDeltas', () => {
  const renewed: PlacedFacts = { ...monthly, expirationDate: '2026-05-01T23:30:00.000Z' };
  const cell = (end_day: string, n: number, extra: Partial<ReturnType<typeof customerCellOf>> = {}) => ({
    app_id: 'a',
    end_day,
    first_week: '2026-03-09',
    product_id: 'apple:monthly',
    renewal_intent: 'Renew',
    grace_day: 'infinity',
    billing_retry: false,
    n,
    ...extra,
  });

  it('a new row adds one to the cell of no subscription; its first summary moves it on', () => {
    expect(
      customerCellDeltas([
        { app_id: 'a', after: NO_FACTS },
        { app_id: 'a', before: NO_FACTS, after: monthly },
      ]),
    ).toEqual([cell('2026-04-01', 1)]);
  });

  it('a renewal moves the customer to its new access-end day; a summary that leaves the cell alone changes nothing', () => {
    expect(customerCellDeltas([{ app_id: 'a', before: monthly, after: renewed }])).toEqual([cell('2026-04-01', -1), cell('2026-05-01', 1)]);
    expect(
      customerCellDeltas([{ app_id: 'a', before: monthly, after: { ...monthly, expirationDate: '2026-04-01T00:00:00.000Z', firstSeenDay: '2026-03-09' } }]),
    ).toEqual([]);
  });

  it('a customer found seen a week earlier moves to that week', () => {
    expect(customerCellDeltas([{ app_id: 'a', before: monthly, after: { ...monthly, firstSeenDay: '2026-03-08' } }])).toEqual([
      cell('2026-04-01', -1),
      cell('2026-04-01', 1, { first_week: '2026-03-02' }),
    ]);
  });

  it('an erased row takes one away; changes of one cell across customers add up', () => {
    expect(
      customerCellDeltas([
        { app_id: 'a', before: monthly },
        { app_id: 'a', before: renewed, after: monthly },
        { app_id: 'a', before: renewed, after: { ...renewed, renewalIntent: 'Lapse' } },
      ]),
    ).toEqual([cell('2026-05-01', -2), cell('2026-05-01', 1, { renewal_intent: 'Lapse' })]);
  });
});
