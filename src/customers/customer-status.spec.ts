import { summarizeCustomer, type LifecycleTransaction } from './customer-summary.js';
import { customerStatus, type StatusFacts } from './customer-status.js';
import { D, tx } from './lifecycle-transaction.fixture.js';

// Given a customer's transactions, when asked at an instant, then their status (docs/api.md,
// "Customer status"). Each boundary is asked a millisecond before, at, and after it; the expected
// statuses are written out from the documented rules, not computed.

const at = (iso: string, deltaMs = 0) => new Date(Date.parse(iso) + deltaMs);

/** The stored summary as the read side gets it back (dates as Date). */
const stored = (transactions: LifecycleTransaction[]): StatusFacts => {
  const s = summarizeCustomer(transactions);
  const date = (v: string | null) => (v === null ? null : new Date(v));
  return { expirationDate: date(s.expirationDate), graceFrom: date(s.graceFrom), billingRetry: s.billingRetry };
};
const statusAt = (transactions: LifecycleTransaction[], now: Date) => customerStatus(stored(transactions), now);

describe('customerStatus', () => {
  it('given no transactions, then none at any instant', () => {
    expect(statusAt([], at(D('2026-01-01')))).toBe('none');
  });

  it('given a monthly expiring 02-01, when the access end passes, then active until the instant before and expired from it', () => {
    const history = [tx({})];
    expect(statusAt(history, at(D('2026-02-01'), -1))).toBe('active');
    expect(statusAt(history, at(D('2026-02-01')))).toBe('expired');
    expect(statusAt(history, at(D('2026-02-01'), 1))).toBe('expired');
  });

  it('given billing retry with a grace period 02-01..02-17, then active, grace_period from the expiration, billing_retry from the grace end', () => {
    const history = [tx({ isBillingRetryPeriod: true, gracePeriodExpirationDate: D('2026-02-17'), snapshotTime: D('2026-02-01') })];
    expect(statusAt(history, at(D('2026-02-01'), -1))).toBe('active');
    expect(statusAt(history, at(D('2026-02-01')))).toBe('grace_period');
    expect(statusAt(history, at(D('2026-02-17'), -1))).toBe('grace_period');
    expect(statusAt(history, at(D('2026-02-17')))).toBe('billing_retry');
  });

  it('given billing retry without a grace period, then billing_retry from the expiration', () => {
    const history = [tx({ isBillingRetryPeriod: true })];
    expect(statusAt(history, at(D('2026-02-01'), -1))).toBe('active');
    expect(statusAt(history, at(D('2026-02-01')))).toBe('billing_retry');
  });

  it('given the store said the grace period expired (isExpired) while still retrying, then billing_retry from that snapshot', () => {
    const history = [tx({ isBillingRetryPeriod: true, gracePeriodExpirationDate: D('2026-02-17'), isExpired: true, snapshotTime: D('2026-02-17') })];
    expect(statusAt(history, at(D('2026-02-01'), -1))).toBe('active');
    expect(statusAt(history, at(D('2026-02-01')))).toBe('billing_retry');
  });

  it('given a refund (revocationDate 01-15), then expired from the refund even while billing retry was flagged', () => {
    const history = [tx({ revocationDate: D('2026-01-15'), isExpired: true, isBillingRetryPeriod: true })];
    expect(statusAt(history, at(D('2026-01-15'), -1))).toBe('active');
    expect(statusAt(history, at(D('2026-01-15')))).toBe('expired');
  });

  it('given only a pending purchase, then none (it never granted access), and active once it completes', () => {
    expect(statusAt([tx({ isPending: true })], at(D('2026-01-10')))).toBe('none');
    expect(statusAt([tx({ isPending: false })], at(D('2026-01-10')))).toBe('active');
  });

  it('given only a consumable (no expirationDate), then none', () => {
    expect(statusAt([tx({ expirationDate: null })], at(D('2026-01-10')))).toBe('none');
  });

  it('given a yearly replaced by a monthly in billing retry, then the current monthly decides', () => {
    const yearly = tx({ transactionId: 'apple:y', productId: 'apple:yearly', expirationDate: D('2027-01-01') });
    const monthly = tx({
      transactionId: 'apple:m',
      productId: 'apple:monthly',
      transactionDate: D('2026-03-01'),
      expirationDate: D('2026-04-01'),
      isBillingRetryPeriod: true,
    });
    expect(summarizeCustomer([yearly, monthly])).toMatchObject({ productId: 'apple:monthly', billingRetry: true, graceFrom: null });
    expect(statusAt([yearly, monthly], at(D('2026-04-01'), -1))).toBe('active');
    expect(statusAt([yearly, monthly], at(D('2026-04-01')))).toBe('billing_retry');
  });

  it('given a customer whose every subscription is replaced, then billing retry of the replaced one does not count', () => {
    const history = [tx({ isUpgraded: true, isBillingRetryPeriod: true })];
    expect(statusAt(history, at(D('2026-02-01')))).toBe('expired');
  });

  it('is a partition: exactly one status for any facts and instant', () => {
    const instants = ['2026-01-31', '2026-02-01', '2026-02-10', '2026-02-17', '2026-03-01'].map((d) => at(D(d)));
    const dates = [null, at(D('2026-02-01')), at(D('2026-02-17'))];
    for (const expirationDate of dates)
      for (const graceFrom of dates)
        for (const billingRetry of [false, true])
          for (const now of instants) {
            const s = customerStatus({ expirationDate, graceFrom, billingRetry }, now);
            expect(['active', 'grace_period', 'billing_retry', 'expired', 'none']).toContain(s);
          }
  });
});
