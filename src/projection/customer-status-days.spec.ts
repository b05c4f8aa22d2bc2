import { statusDayDeltas, type PlacedFacts } from './customer-status-days.js';

const monthly: PlacedFacts = {
  firstSeenDay: '2026-03-01',
  expirationDate: '2026-04-01T10:00:00.000Z',
  productId: 'apple:monthly',
  renewalIntent: 'Renew',
  graceFrom: null,
  billingRetry: false,
};
const watermark = new Map([['a', new Date('2026-03-15T00:00:00.000Z')]]);
const place = (status: string, n: number, first_day = '2026-03-01', product_id = 'apple:monthly') => ({ app_id: 'a', first_day, status, product_id, renewal_intent: 'Renew', n });

describe('statusDayDeltas', () => {
  it('places a new customer at its status at the watermark, not at the clock', () => {
    expect(statusDayDeltas([{ app_id: 'a', after: monthly }], watermark)).toEqual([place('active', 1)]);
    expect(statusDayDeltas([{ app_id: 'a', after: monthly }], new Map([['a', new Date('2026-04-01T10:00:00.000Z')]]))).toEqual([place('expired', 1)]);
  });

  it('moves nothing for a renewal that leaves the status at the watermark as it was', () => {
    expect(statusDayDeltas([{ app_id: 'a', before: monthly, after: { ...monthly, expirationDate: '2026-05-01T10:00:00.000Z' } }], watermark)).toEqual([]);
  });

  it('moves a customer whose first-seen day, product or status at the watermark changed', () => {
    expect(statusDayDeltas([{ app_id: 'a', before: monthly, after: { ...monthly, firstSeenDay: '2026-02-27' } }], watermark)).toEqual([place('active', -1), place('active', 1, '2026-02-27')]);
    expect(statusDayDeltas([{ app_id: 'a', before: monthly, after: { ...monthly, expirationDate: '2026-03-10T00:00:00.000Z', billingRetry: true } }], watermark)).toEqual([
      place('active', -1),
      place('billing_retry', 1),
    ]);
    expect(statusDayDeltas([{ app_id: 'a', before: monthly, after: { ...monthly, graceFrom: '2026-03-14T00:00:00.000Z' } }], watermark)).toEqual([place('active', -1), place('grace_period', 1)]);
  });

  it('takes an erased customer away, and refuses an application without a watermark', () => {
    expect(statusDayDeltas([{ app_id: 'a', before: monthly }], watermark)).toEqual([place('active', -1)]);
    expect(() => statusDayDeltas([{ app_id: 'b', after: monthly }], watermark)).toThrow('no status watermark for application b');
  });
});
