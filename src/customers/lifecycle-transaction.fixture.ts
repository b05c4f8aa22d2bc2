import fc from 'fast-check';
import type { LifecycleTransaction } from './customer-summary.js';

/** Test fixture: a day as the contract writes instants. */
export const D = (day: string) => `${day}T00:00:00.000000Z`;

/** Test fixture: a monthly Apple transaction bought 2026-01-01, changed by `over`. */
export const tx = (over: Partial<LifecycleTransaction>): LifecycleTransaction => ({
  transactionId: 'apple:t1',
  receiptId: 'apple:r1',
  purchaseId: 'apple:r1',
  productId: 'apple:monthly',
  transactionDate: D('2026-01-01'),
  snapshotTime: D('2026-01-01'),
  expirationDate: D('2026-02-01'),
  gracePeriodExpirationDate: null,
  revocationDate: null,
  isPending: null,
  isUpgraded: null,
  isExpired: null,
  isBillingRetryPeriod: null,
  cancelationReason: null,
  lastRenewalDate: null,
  renewalIntent: 'Renew',
  ...over,
});

/** Test fixture: one of four days of 2026, the instants the generated histories use. */
export const lifecycleDay = fc.constantFrom('2026-01-01', '2026-02-01', '2026-03-01', '2026-04-01').map(D);

const maybe = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: null });

/** Test fixture: any transaction over four ids, two receipts and two products, every lifecycle fact free. */
export const lifecycleTransaction: fc.Arbitrary<LifecycleTransaction> = fc.record({
  transactionId: fc.constantFrom('apple:a', 'apple:B', 'apple:c', 'apple:D'),
  receiptId: fc.constantFrom('apple:r1', 'apple:r2'),
  purchaseId: fc.constantFrom('apple:r1', 'apple:r2'),
  productId: fc.constantFrom('apple:monthly', 'apple:yearly'),
  transactionDate: lifecycleDay,
  snapshotTime: lifecycleDay,
  expirationDate: maybe(lifecycleDay),
  gracePeriodExpirationDate: maybe(lifecycleDay),
  revocationDate: maybe(lifecycleDay),
  isPending: maybe(fc.boolean()),
  isUpgraded: maybe(fc.boolean()),
  isExpired: maybe(fc.boolean()),
  isBillingRetryPeriod: maybe(fc.boolean()),
  cancelationReason: maybe(fc.constantFrom('System.Replaced', 'Customer.Refund')),
  lastRenewalDate: maybe(lifecycleDay),
  renewalIntent: maybe(fc.constantFrom('Renew', 'Lapse')),
});
