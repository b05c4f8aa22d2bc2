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
