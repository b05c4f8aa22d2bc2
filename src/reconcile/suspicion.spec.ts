import { suspicion, type SubscriptionHead } from './suspicion.js';

const DAY = 86_400_000;
const NOW = Date.parse('2026-11-28T12:00:00.000Z');
const ago = (days: number) => new Date(NOW - days * DAY);
const policy = { overdueMarginMs: DAY, checkEveryMs: 30 * DAY };

/** An active monthly subscription set to renew, vouched for an hour ago, never checked. */
const head = (o: Partial<SubscriptionHead> = {}): SubscriptionHead => ({
  receiptId: 'apple:1',
  platform: 'apple',
  productId: 'apple:monthly',
  expirationDate: ago(-20),
  gracePeriodExpirationDate: null,
  renewalIntent: 'Renew',
  isBillingRetryPeriod: null,
  isPending: null,
  isExpired: null,
  isUpgraded: null,
  revocationDate: null,
  purchaseDate: ago(10),
  firstEventAt: ago(10),
  versionTime: new Date(NOW - 3_600_000),
  checkedAt: null,
  ...o,
});

describe('suspicion (which subscriptions the reconciler asks about)', () => {
  it('leaves a subscription alone whose state is certain: active and recently vouched for, or ended', () => {
    expect(suspicion(head(), NOW, policy)).toBeUndefined();
    expect(suspicion(head({ expirationDate: ago(3), isExpired: true }), NOW, policy)).toBeUndefined();
    expect(suspicion(head({ revocationDate: ago(1) }), NOW, policy)).toBeUndefined();
    expect(suspicion(head({ expirationDate: ago(3), isUpgraded: true }), NOW, policy)).toBeUndefined();
    // ended and not set to renew: nothing more is expected
    expect(suspicion(head({ expirationDate: ago(3), renewalIntent: 'Lapse' }), NOW, policy)).toBeUndefined();
  });

  it('asks about a renewal overdue by more than the margin, counting grace', () => {
    expect(suspicion(head({ expirationDate: ago(0.5) }), NOW, policy)).toBeUndefined();
    expect(suspicion(head({ expirationDate: ago(2) }), NOW, policy)).toBe('renewal_overdue');
    expect(suspicion(head({ expirationDate: ago(2), gracePeriodExpirationDate: ago(-3) }), NOW, policy)).toBeUndefined();
  });

  it('asks about billing retry past its grace end or past the longest retry, and a purchase pending for days', () => {
    expect(suspicion(head({ expirationDate: ago(10), isBillingRetryPeriod: true, gracePeriodExpirationDate: ago(-2) }), NOW, policy)).toBeUndefined();
    expect(suspicion(head({ expirationDate: ago(10), isBillingRetryPeriod: true, gracePeriodExpirationDate: ago(2) }), NOW, policy)).toBe('retry_overdue');
    expect(suspicion(head({ expirationDate: ago(10), isBillingRetryPeriod: true }), NOW, policy)).toBeUndefined();
    expect(suspicion(head({ expirationDate: ago(62), isBillingRetryPeriod: true }), NOW, policy)).toBe('retry_overdue');
    expect(suspicion(head({ isPending: true, purchaseDate: ago(1) }), NOW, policy)).toBeUndefined();
    expect(suspicion(head({ isPending: true, purchaseDate: ago(4) }), NOW, policy)).toBe('pending_overdue');
  });

  it('does not ask again within the margin of the last check', () => {
    expect(suspicion(head({ expirationDate: ago(2), checkedAt: ago(0.5) }), NOW, policy)).toBeUndefined();
    expect(suspicion(head({ expirationDate: ago(2), checkedAt: ago(1.5) }), NOW, policy)).toBe('renewal_overdue');
  });

  it('samples what no notification, import or check vouched for within RECONCILE_CHECK_EVERY, and ended ones only while recent', () => {
    expect(suspicion(head({ versionTime: ago(31) }), NOW, policy)).toBe('sample');
    expect(suspicion(head({ versionTime: ago(31), checkedAt: ago(29) }), NOW, policy)).toBeUndefined();
    expect(suspicion(head({ versionTime: ago(40), expirationDate: ago(10), isExpired: true }), NOW, policy)).toBe('sample');
    expect(suspicion(head({ versionTime: ago(90), expirationDate: ago(60), isExpired: true }), NOW, policy)).toBeUndefined();
  });
});
