import fc from 'fast-check';
import { customerEntitlements, grantsDigest, type EntitlementTransaction } from './customer-entitlements.js';
import { customerStatus } from './customer-status.js';
import { grantingTransactions, summarizeCustomer, type LifecycleTransaction } from './customer-summary.js';
import { D, lifecycleDay, lifecycleTransaction, tx } from './lifecycle-transaction.fixture.js';

// docs/entitlements.md, "What grants an entitlement", one case per rule, given / when / then, the
// expected entries written out. Asked on 2026-10-15 unless said.

const NOW = new Date('2026-10-15T00:00:00.000Z');
const at = (day: string) => new Date(`${day}T00:00:00.000Z`);

/** A transaction whose own snapshot says what it shows, unless `over` says otherwise. */
const withSnapshot = <T extends LifecycleTransaction>(x: T) => ({ snapshotIsUpgraded: x.isUpgraded, snapshotCancelationReason: x.cancelationReason, ...x });

const t = (over: Partial<EntitlementTransaction>): EntitlementTransaction =>
  withSnapshot({
    ...tx({ transactionDate: D('2026-10-01'), expirationDate: D('2026-11-01') }),
    purchaseDate: null,
    renewalDate: null,
    isConsumed: null,
    ...over,
  });

/** pro: the monthly and yearly pro products, and the lifetime unlock; max: max_monthly. */
const DEFINITIONS: Record<string, string[]> = {
  'apple:pro_monthly': ['pro'],
  'apple:pro_yearly': ['pro'],
  'apple:max_monthly': ['max', 'pro'],
  'apple:lifetime': ['pro'],
  'apple:coins': ['pro'],
};
const grants = (productId: string) => DEFINITIONS[productId] ?? [];

const base = { isInGracePeriod: false, isInBillingRetry: false, renewalIntent: 'Renew' };

describe('customerEntitlements', () => {
  it('given no transaction of a listed product, then no entry', () => {
    expect(customerEntitlements([t({ productId: 'apple:other' })], grants, NOW)).toEqual([]);
  });

  it('given an active monthly, then active until its access end, with its dates', () => {
    const monthly = t({ transactionId: 'apple:m-2', productId: 'apple:pro_monthly', purchaseDate: D('2026-08-01'), lastRenewalDate: D('2026-10-01') });
    expect(customerEntitlements([monthly], grants, NOW)).toEqual([
      {
        ...base,
        identifier: 'pro',
        isActive: true,
        expirationDate: at('2026-11-01'),
        productId: 'apple:pro_monthly',
        transactionId: 'apple:m-2',
        purchaseDate: at('2026-08-01'),
        lastRenewalDate: at('2026-10-01'),
      },
    ]);
  });

  it('given an upgrade within the subscription (another product charged while the first was paid for), then the entitlement moves to the new product', () => {
    const yearly = t({
      transactionId: 'apple:y-1',
      purchaseId: 'apple:p',
      productId: 'apple:pro_yearly',
      transactionDate: D('2026-01-10'),
      expirationDate: D('2027-01-10'),
    });
    const max = t({
      transactionId: 'apple:x-1',
      purchaseId: 'apple:p',
      productId: 'apple:max_monthly',
      transactionDate: D('2026-10-01'),
      expirationDate: D('2026-11-01'),
    });
    const entries = customerEntitlements([yearly, max], grants, NOW);
    expect(entries.map((e) => [e.identifier, e.productId, e.isActive, e.expirationDate])).toEqual([
      ['max', 'apple:max_monthly', true, at('2026-11-01')],
      ['pro', 'apple:max_monthly', true, at('2026-11-01')],
    ]);
  });

  it('given two granting subscriptions and a refund of one, then the other keeps the entitlement', () => {
    const refunded = t({
      transactionId: 'apple:y-1',
      receiptId: 'apple:r-y',
      purchaseId: 'apple:y',
      productId: 'apple:pro_yearly',
      transactionDate: D('2026-01-10'),
      expirationDate: D('2027-01-10'),
      revocationDate: D('2026-10-05'),
    });
    const monthly = t({ transactionId: 'apple:m-1', productId: 'apple:pro_monthly' });
    expect(customerEntitlements([refunded, monthly], grants, NOW)).toMatchObject([{ identifier: 'pro', isActive: true, productId: 'apple:pro_monthly' }]);
    // and once the refund is the only one: ended at the refund
    expect(customerEntitlements([refunded], grants, NOW)).toMatchObject([
      { identifier: 'pro', isActive: false, expirationDate: at('2026-10-05'), productId: 'apple:pro_yearly' },
    ]);
  });

  it('given billing retry with a grace period, then active in grace; without one, inactive in billing retry', () => {
    const lapsed = { productId: 'apple:pro_monthly', transactionDate: D('2026-09-10'), expirationDate: D('2026-10-10'), isBillingRetryPeriod: true };
    expect(customerEntitlements([t({ ...lapsed, gracePeriodExpirationDate: D('2026-10-26') })], grants, NOW)).toMatchObject([
      { identifier: 'pro', isActive: true, isInGracePeriod: true, isInBillingRetry: false, expirationDate: at('2026-10-26') },
    ]);
    expect(customerEntitlements([t(lapsed)], grants, NOW)).toMatchObject([
      { identifier: 'pro', isActive: false, isInGracePeriod: false, isInBillingRetry: true, expirationDate: at('2026-10-10') },
    ]);
  });

  it('given a pending purchase, then nothing', () => {
    expect(customerEntitlements([t({ productId: 'apple:pro_monthly', isPending: true })], grants, NOW)).toEqual([]);
  });

  it('given a lifetime (non-consumable) purchase, then active for good without expirationDate; refunded, ended at the refund', () => {
    const lifetime = t({ transactionId: 'apple:l-1', productId: 'apple:lifetime', expirationDate: null, renewalIntent: null, purchaseDate: D('2024-05-01') });
    expect(customerEntitlements([lifetime], grants, NOW)).toEqual([
      {
        identifier: 'pro',
        isActive: true,
        productId: 'apple:lifetime',
        transactionId: 'apple:l-1',
        purchaseDate: at('2024-05-01'),
        isInGracePeriod: false,
        isInBillingRetry: false,
      },
    ]);
    const refunded = { ...lifetime, revocationDate: D('2026-06-01') };
    expect(customerEntitlements([refunded], grants, NOW)).toMatchObject([{ identifier: 'pro', isActive: false, expirationDate: at('2026-06-01') }]);
    // a lifetime purchase describes the entitlement over a subscription that also grants it
    expect(customerEntitlements([t({ productId: 'apple:pro_monthly' }), lifetime], grants, NOW)).toMatchObject([
      { productId: 'apple:lifetime', isActive: true },
    ]);
  });

  it('given a consumed purchase (a consumable), then never, even of a listed product', () => {
    expect(customerEntitlements([t({ productId: 'apple:coins', expirationDate: null, isConsumed: true })], grants, NOW)).toEqual([]);
  });

  it('given only ended grants, then the one that ended last; decided at the instant asked', () => {
    const april = t({ transactionId: 'apple:a', productId: 'apple:pro_monthly', transactionDate: D('2026-03-01'), expirationDate: D('2026-04-01') });
    const june = t({ transactionId: 'apple:j', productId: 'apple:pro_monthly', transactionDate: D('2026-05-01'), expirationDate: D('2026-06-01') });
    expect(customerEntitlements([june, april], grants, NOW)).toMatchObject([{ transactionId: 'apple:j', isActive: false, expirationDate: at('2026-06-01') }]);
    expect(customerEntitlements([june, april], grants, at('2026-05-20'))).toMatchObject([{ transactionId: 'apple:j', isActive: true }]);
    // at the access end itself: no longer active (as activeSubscriber)
    expect(customerEntitlements([june], grants, at('2026-06-01'))).toMatchObject([{ isActive: false }]);
  });

  it('given a subscription replaced by its own flags, its replacement not seen yet, and an older unrelated one that ended, then the replaced one still grants until its access end', () => {
    const replaced = t({
      transactionId: 'apple:y-1',
      receiptId: 'apple:r-y',
      purchaseId: 'apple:y',
      productId: 'apple:pro_yearly',
      transactionDate: D('2026-06-01'),
      expirationDate: D('2027-02-01'),
      cancelationReason: 'System.Replaced',
    });
    const other = t({ transactionId: 'apple:o-1', productId: 'apple:other', transactionDate: D('2025-09-01'), expirationDate: D('2025-10-01') });
    expect(customerEntitlements([replaced, other], grants, NOW)).toEqual([
      { ...base, identifier: 'pro', isActive: true, productId: 'apple:pro_yearly', transactionId: 'apple:y-1', expirationDate: at('2027-02-01') },
    ]);
  });

  it('given a Google upgrade (the old purchase flagged, the new one another token granting only max), then pro is listed as held, ended when max began', () => {
    const old = t({
      transactionId: 'google:GPA.1',
      receiptId: 'google:tok-1',
      purchaseId: 'google:GPA.1',
      productId: 'apple:pro_yearly',
      transactionDate: D('2026-06-01'),
      expirationDate: D('2027-06-01'),
      isUpgraded: true,
    });
    const upgrade = t({
      transactionId: 'google:GPA.2',
      receiptId: 'google:tok-2',
      purchaseId: 'google:GPA.2',
      productId: 'apple:basic_only_max',
      transactionDate: D('2026-10-01'),
      expirationDate: D('2026-11-01'),
    });
    const maxOnly = (productId: string) => (productId === 'apple:basic_only_max' ? ['max'] : grants(productId));
    expect(customerEntitlements([old, upgrade], maxOnly, NOW)).toEqual([
      { ...base, identifier: 'max', isActive: true, productId: 'apple:basic_only_max', transactionId: 'google:GPA.2', expirationDate: at('2026-11-01') },
      { ...base, identifier: 'pro', isActive: false, productId: 'apple:pro_yearly', transactionId: 'google:GPA.1', expirationDate: at('2026-10-01') },
    ]);
  });

  it('given a Google upgrade and an older unrelated subscription renewed between, then the flagged purchase grants until the new token was bought, not until that renewal', () => {
    const old = t({
      transactionId: 'google:GPA.1',
      receiptId: 'google:tok-1',
      purchaseId: 'google:GPA.1',
      productId: 'apple:pro_yearly',
      transactionDate: D('2026-06-01'),
      purchaseDate: D('2026-06-01'),
      expirationDate: D('2027-06-01'),
      isUpgraded: true,
    });
    // an unrelated subscription bought in 2025 renews on 08-01: started before the flagged one
    const renewal = t({
      transactionId: 'apple:o-2',
      receiptId: 'apple:r-o',
      purchaseId: 'apple:o',
      productId: 'apple:other',
      transactionDate: D('2026-08-01'),
      purchaseDate: D('2025-08-01'),
      expirationDate: D('2026-09-01'),
    });
    const upgrade = t({
      transactionId: 'google:GPA.2',
      receiptId: 'google:tok-2',
      purchaseId: 'google:GPA.2',
      productId: 'apple:basic_only_max',
      transactionDate: D('2026-10-01'),
      purchaseDate: D('2026-10-01'),
      expirationDate: D('2026-11-01'),
    });
    const maxOnly = (productId: string) => (productId === 'apple:basic_only_max' ? ['max'] : grants(productId));
    expect(customerEntitlements([old, renewal, upgrade], maxOnly, NOW).find((e) => e.identifier === 'pro')).toEqual({
      ...base,
      identifier: 'pro',
      isActive: false,
      productId: 'apple:pro_yearly',
      transactionId: 'google:GPA.1',
      purchaseDate: at('2026-06-01'),
      expirationDate: at('2026-10-01'),
    });
  });

  it("given an older Google subscription whose renewal order (no purchaseDate, as Google's renewals) falls between, then the flagged purchase is not cut short there", () => {
    const flagged = t({
      transactionId: 'google:GPA.a',
      receiptId: 'google:tok-a',
      purchaseId: 'google:GPA.a',
      productId: 'apple:pro_yearly',
      transactionDate: D('2026-05-01'),
      purchaseDate: D('2026-05-01'),
      expirationDate: D('2026-11-01'),
      cancelationReason: 'System.Replaced',
    });
    const first = { receiptId: 'google:tok-p', purchaseId: 'google:GPA.p', productId: 'google:other' };
    const bought = t({
      ...first,
      transactionId: 'google:GPA.p',
      transactionDate: D('2026-01-01'),
      purchaseDate: D('2026-01-01'),
      expirationDate: D('2026-05-10'),
    });
    const renewed = t({ ...first, transactionId: 'google:GPA.p..4', transactionDate: D('2026-05-10'), purchaseDate: null, expirationDate: D('2026-06-10') });
    expect(customerEntitlements([flagged, bought, renewed], grants, NOW)).toEqual([
      {
        ...base,
        identifier: 'pro',
        isActive: true,
        productId: 'apple:pro_yearly',
        transactionId: 'google:GPA.a',
        purchaseDate: at('2026-05-01'),
        expirationDate: at('2026-11-01'),
      },
    ]);
  });

  it('given a transaction flagged by its own snapshot and also replaced within its subscription, then it ends at that replacement, not at an unrelated purchase before it', () => {
    const yearly = t({
      transactionId: 'apple:y-1',
      receiptId: 'apple:r-y',
      purchaseId: 'apple:y',
      productId: 'apple:pro_yearly',
      transactionDate: D('2026-01-10'),
      expirationDate: D('2027-01-10'),
      isUpgraded: true,
    });
    const upgrade = t({
      transactionId: 'apple:y-2',
      receiptId: 'apple:r-y',
      purchaseId: 'apple:y',
      productId: 'apple:plus',
      transactionDate: D('2026-10-01'),
      expirationDate: D('2026-11-01'),
    });
    const addon = t({
      transactionId: 'apple:a-1',
      receiptId: 'apple:r-a',
      purchaseId: 'apple:a',
      productId: 'apple:addon',
      transactionDate: D('2026-03-01'),
      expirationDate: D('2027-03-01'),
    });
    expect(customerEntitlements([yearly, upgrade, addon], grants, NOW)).toEqual([
      { ...base, identifier: 'pro', isActive: false, productId: 'apple:pro_yearly', transactionId: 'apple:y-1', expirationDate: at('2026-10-01') },
    ]);
  });

  it('given a yearly replaced by a crossgrade within its subscription (not by its own flags), then it grants until the crossgrade, whatever an unrelated renewal does', () => {
    // shown replaced (rule 2 marks it), its own snapshot says nothing of a replacement
    const yearly = t({
      transactionId: 'apple:y-1',
      receiptId: 'apple:r-y',
      purchaseId: 'apple:y',
      productId: 'apple:pro_yearly',
      transactionDate: D('2026-03-01'),
      expirationDate: D('2027-03-01'),
      isUpgraded: true,
      cancelationReason: 'System.Replaced',
      snapshotIsUpgraded: null,
      snapshotCancelationReason: null,
    });
    const crossgrade = t({
      transactionId: 'apple:y-2',
      receiptId: 'apple:r-y',
      purchaseId: 'apple:y',
      productId: 'apple:plus',
      transactionDate: D('2026-09-01'),
      expirationDate: D('2026-10-01'),
    });
    const renewal = t({
      transactionId: 'google:GPA.r',
      receiptId: 'google:tok-r',
      purchaseId: 'google:GPA.r',
      productId: 'google:other',
      transactionDate: D('2026-05-01'),
      expirationDate: D('2027-05-01'),
    });
    expect(customerEntitlements([yearly, crossgrade, renewal], grants, NOW)).toEqual([
      { ...base, identifier: 'pro', isActive: false, productId: 'apple:pro_yearly', transactionId: 'apple:y-1', expirationDate: at('2026-09-01') },
    ]);
  });

  it("given a one-time purchase the store says expired without a revocation (Google's cancelled purchase), then it granted until that snapshot", () => {
    const cancelled = t({
      transactionId: 'google:GPA.9',
      productId: 'apple:lifetime',
      expirationDate: null,
      isExpired: true,
      cancelationReason: 'Customer',
      snapshotTime: D('2026-10-02'),
      renewalIntent: null,
    });
    expect(customerEntitlements([cancelled], grants, NOW)).toEqual([
      {
        ...base,
        renewalIntent: undefined,
        identifier: 'pro',
        isActive: false,
        productId: 'apple:lifetime',
        transactionId: 'google:GPA.9',
        expirationDate: at('2026-10-02'),
      },
    ]);
  });
});

// One rule, two readings held equal: when an entitlement is granted by every product and nothing
// grants for good, its entry is the customer's current subscription read at the instant, field by
// field (customerInfo and the status of docs/api.md), since both take the same candidates.
describe('customerEntitlements against the customer summary', () => {
  it('an entitlement every subscription grants reads as the current subscription: same access end, product, activity, grace and billing retry', () => {
    const maybe = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: null });
    const transaction = fc
      .record({ purchaseDate: maybe(lifecycleDay), renewalDate: maybe(lifecycleDay) })
      .chain((dates) => lifecycleTransaction.map((t) => ({ ...t, ...dates })));
    // one-time purchases are consumed here: nothing grants for good. Replaced transactions are left
    // out: an entitlement counts each subscription on its own (the cases above), the current
    // subscription is one for the whole customer.
    const history = fc
      .array(transaction, { maxLength: 6 })
      .map((ts) => ts.map((t) => withSnapshot({ ...t, isConsumed: t.expirationDate === null })))
      .filter((ts) => grantingTransactions(ts).every((c) => !c.replaced));
    const instant = fc.constantFrom('2026-01-15', '2026-02-01', '2026-03-15', '2026-04-01', '2026-05-01').map((d) => new Date(`${d}T00:00:00.000Z`));
    fc.assert(
      fc.property(history, instant, (transactions, now) => {
        const summary = summarizeCustomer(transactions);
        const entries = customerEntitlements(transactions, () => ['all'], now);
        if (summary.expirationDate === null) {
          expect(entries).toEqual([]);
          return;
        }
        const status = customerStatus(
          {
            expirationDate: new Date(summary.expirationDate),
            graceFrom: summary.graceFrom === null ? null : new Date(summary.graceFrom),
            billingRetry: summary.billingRetry,
          },
          now,
        );
        expect(entries).toHaveLength(1);
        expect(entries[0]).toMatchObject({
          identifier: 'all',
          expirationDate: new Date(summary.expirationDate),
          productId: summary.productId,
          isActive: new Date(summary.expirationDate) > now,
          isInGracePeriod: status === 'grace_period',
          isInBillingRetry: status === 'billing_retry',
        });
        expect(entries[0].renewalIntent ?? null).toBe(summary.renewalIntent);
        expect(entries[0].lastRenewalDate ?? null).toEqual(summary.lastRenewalDate === null ? null : new Date(summary.lastRenewalDate));
      }),
      { numRuns: 3000 },
    );
  });
});

// grantsDigest stands for what customerEntitlements reads: the change feed moves a customer when it
// changes (docs/change-feed.md). It must not depend on the order of the transactions, a batch
// that only adds transactions must reach the sum of all of them from the stored sum, and a change
// of any field the rules read must change it.
describe('grantsDigest', () => {
  const withDates = fc
    .record({
      purchaseDate: fc.option(lifecycleDay, { nil: null }),
      renewalDate: fc.option(lifecycleDay, { nil: null }),
      isConsumed: fc.option(fc.boolean(), { nil: null }),
    })
    .chain((extra) => lifecycleTransaction.map((t): EntitlementTransaction => withSnapshot({ ...t, ...extra })));

  it('is the same in any order, and extending the stored sum equals summing everything', () => {
    fc.assert(
      fc.property(fc.array(withDates, { maxLength: 6 }), fc.array(withDates, { maxLength: 4 }), (before, added) => {
        const all = grantsDigest([...before, ...added]);
        expect(grantsDigest([...added, ...before].reverse())).toBe(all);
        expect(grantsDigest(added, grantsDigest(before))).toBe(all);
        expect(all).toBe(BigInt.asIntN(64, all));
      }),
      { numRuns: 500 },
    );
  });

  it('changes with every field the entitlement rules read; the snapshot time only where a rule reads it', () => {
    const base: EntitlementTransaction = withSnapshot({ ...tx({}), purchaseDate: D('2026-01-01'), renewalDate: null, isConsumed: null });
    const changes: Partial<EntitlementTransaction>[] = [
      { transactionId: 'apple:t2' },
      { receiptId: 'apple:r2' },
      { purchaseId: 'apple:p2' },
      { productId: 'apple:yearly' },
      { transactionDate: D('2026-01-02') },
      { expirationDate: D('2026-03-01') },
      { gracePeriodExpirationDate: D('2026-02-10') },
      { revocationDate: D('2026-01-15') },
      { isPending: true },
      { isUpgraded: true },
      { isExpired: true },
      { isBillingRetryPeriod: true },
      { cancelationReason: 'Customer.Refund' },
      { lastRenewalDate: D('2026-01-01') },
      { renewalIntent: 'Lapse' },
      { purchaseDate: D('2026-01-02') },
      { renewalDate: D('2026-02-01') },
      { isConsumed: true },
      { snapshotIsUpgraded: true },
      { snapshotCancelationReason: 'System.Replaced' },
    ];
    const digest = grantsDigest([base]);
    for (const change of changes) expect([change, grantsDigest([{ ...base, ...change }])]).not.toEqual([change, digest]);
    expect(grantsDigest([{ ...base, snapshotTime: D('2026-01-20') }])).toBe(digest);
    const expired = { ...base, isExpired: true };
    expect(grantsDigest([{ ...expired, snapshotTime: D('2026-01-20') }])).not.toBe(grantsDigest([expired]));
    // said expired again by a newer snapshot after the expiration: the end read is the expiration, unchanged
    expect(grantsDigest([{ ...expired, snapshotTime: D('2026-03-01') }])).toBe(grantsDigest([{ ...expired, snapshotTime: D('2026-04-01') }]));
  });
});
