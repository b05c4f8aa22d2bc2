import { customerInfo, type StoredCustomerFacts } from './customer-info.js';

const now = new Date('2024-06-01T00:00:00.000Z');
const facts = (over: Partial<StoredCustomerFacts>): StoredCustomerFacts => ({
  transactionCount: 1,
  lastPurchaseDate: null,
  expirationDate: null,
  lastRenewalDate: null,
  renewalIntent: null,
  ...over,
});

describe('customerInfo', () => {
  it('is an empty object for a customer with no transactions', () => {
    expect(customerInfo(facts({ transactionCount: 0, expirationDate: new Date('2030-01-01') }), now)).toEqual({});
  });

  it('copies the aggregated dates and the renewal fields of the latest-expiring transaction', () => {
    const info = customerInfo(
      facts({
        lastPurchaseDate: new Date('2024-05-01T00:00:00Z'),
        expirationDate: new Date('2024-07-01T00:00:00Z'),
        lastRenewalDate: new Date('2024-06-01T00:00:00Z'),
        renewalIntent: 'Renew',
      }),
      now,
    );
    expect(info).toEqual({
      lastPurchaseDate: new Date('2024-05-01T00:00:00Z'),
      expirationDate: new Date('2024-07-01T00:00:00Z'),
      lastRenewalDate: new Date('2024-06-01T00:00:00Z'),
      renewalIntent: 'Renew',
      activeSubscriber: true,
    });
  });

  it('is active only while the access end of the current subscription is after now', () => {
    expect(customerInfo(facts({ expirationDate: new Date(now.getTime() + 1) }), now).activeSubscriber).toBe(true);
    expect(customerInfo(facts({ expirationDate: new Date(now.getTime()) }), now).activeSubscriber).toBe(false);
    expect(customerInfo(facts({ expirationDate: null, lastPurchaseDate: new Date('2024-05-01T00:00:00Z') }), now).activeSubscriber).toBe(false);
  });

  it('omits fields that have no value', () => {
    expect(customerInfo(facts({}), now)).toEqual({ activeSubscriber: false });
  });
});
