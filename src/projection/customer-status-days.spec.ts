import { epochMicros, statusDayDeltas, type PlacedFacts } from './customer-status-days.js';

const monthly: PlacedFacts = {
  firstSeenDay: '2026-03-01',
  expirationDate: '2026-04-01T10:00:00.000000Z',
  productId: 'apple:monthly',
  renewalIntent: 'Renew',
  graceFrom: null,
  billingRetry: false,
};
const at = (time: string) => new Map([['a', epochMicros(time)]]);
const watermark = at('2026-03-15T00:00:00.000000Z');
const place = (status: string, n: number, first_day = '2026-03-01', product_id = 'apple:monthly') => ({ app_id: 'a', first_day, status, product_id, renewal_intent: 'Renew', n });

describe('epochMicros', () => {
  it('keeps the microseconds a stored time carries', () => {
    expect(epochMicros('2026-04-01T10:00:00.000500Z') - epochMicros('2026-04-01T10:00:00.000000Z')).toBe(500);
    expect(epochMicros('2026-04-01T10:00:00.123456Z')).toBe(Date.parse('2026-04-01T10:00:00.123Z') * 1000 + 456);
    expect(epochMicros('2026-04-01T10:00:00.123Z')).toBe(Date.parse('2026-04-01T10:00:00.123Z') * 1000);
  });
});

describe('statusDayDeltas', () => {
  it('places a new customer at its status at the watermark, not at the clock', () => {
    expect(statusDayDeltas([{ app_id: 'a', after: monthly }], watermark)).toEqual([place('active', 1)]);
    expect(statusDayDeltas([{ app_id: 'a', after: monthly }], at('2026-04-01T10:00:00.000000Z'))).toEqual([place('expired', 1)]);
  });

  it('decides to the microsecond, as PostgreSQL does in the sweep and the reads', () => {
    // access ends half a millisecond after the watermark: still active at it (a Date would say expired)
    expect(statusDayDeltas([{ app_id: 'a', after: { ...monthly, expirationDate: '2026-04-01T10:00:00.000500Z' } }], at('2026-04-01T10:00:00.000000Z'))).toEqual([place('active', 1)]);
    expect(statusDayDeltas([{ app_id: 'a', after: { ...monthly, graceFrom: '2026-03-15T00:00:00.000001Z' } }], watermark)).toEqual([place('active', 1)]);
    expect(statusDayDeltas([{ app_id: 'a', after: { ...monthly, graceFrom: '2026-03-15T00:00:00.000000Z' } }], watermark)).toEqual([place('grace_period', 1)]);
  });

  it('moves nothing for a renewal that leaves the status at the watermark as it was', () => {
    expect(statusDayDeltas([{ app_id: 'a', before: monthly, after: { ...monthly, expirationDate: '2026-05-01T10:00:00.000000Z' } }], watermark)).toEqual([]);
  });

  it('moves a customer whose first-seen day, product or status at the watermark changed', () => {
    expect(statusDayDeltas([{ app_id: 'a', before: monthly, after: { ...monthly, firstSeenDay: '2026-02-27' } }], watermark)).toEqual([place('active', -1), place('active', 1, '2026-02-27')]);
    expect(statusDayDeltas([{ app_id: 'a', before: monthly, after: { ...monthly, expirationDate: '2026-03-10T00:00:00.000000Z', billingRetry: true } }], watermark)).toEqual([
      place('active', -1),
      place('billing_retry', 1),
    ]);
    expect(statusDayDeltas([{ app_id: 'a', before: monthly, after: { ...monthly, graceFrom: '2026-03-14T00:00:00.000000Z' } }], watermark)).toEqual([place('active', -1), place('grace_period', 1)]);
  });

  it('takes an erased customer away; an application without a watermark has every access end after it', () => {
    expect(statusDayDeltas([{ app_id: 'a', before: monthly }], watermark)).toEqual([place('active', -1)]);
    const lapsed = { ...monthly, expirationDate: '2020-01-01T00:00:00.000000Z', graceFrom: '2019-12-20T00:00:00.000000Z' };
    expect(statusDayDeltas([{ app_id: 'b', after: lapsed }], watermark)).toEqual([{ ...place('active', 1), app_id: 'b' }]);
  });
});
