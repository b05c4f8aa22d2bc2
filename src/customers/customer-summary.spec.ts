import fc from 'fast-check';
import { accessEnd, extendSummary, replacements, summarizeCustomer } from './customer-summary.js';
import { D, lifecycleTransaction, tx } from './lifecycle-transaction.fixture.js';

// One case per rule of docs/api.md ("Access end", "customerInfo"), expected values written out.

describe('accessEnd', () => {
  it('1. a pending transaction grants nothing', () => {
    expect(accessEnd(tx({ isPending: true }))).toBeNull();
  });

  it('2. a replaced transaction ends at its expiration, or its revocation if earlier', () => {
    expect(accessEnd(tx({ isUpgraded: true }))).toBe(D('2026-02-01'));
    expect(accessEnd(tx({ cancelationReason: 'System.Replaced', revocationDate: D('2026-01-10') }))).toBe(D('2026-01-10'));
    expect(accessEnd(tx({ isUpgraded: true, revocationDate: D('2026-03-01') }))).toBe(D('2026-02-01'));
  });

  it('3. revoked: the earlier of expiration and revocation', () => {
    expect(accessEnd(tx({ expirationDate: D('2027-01-01'), revocationDate: D('2026-03-01'), isExpired: true }))).toBe(D('2026-03-01'));
    expect(accessEnd(tx({ revocationDate: D('2026-05-01') }))).toBe(D('2026-02-01'));
  });

  it('3. isExpired without a revocation ends at the time of the snapshot that said so, if earlier', () => {
    expect(accessEnd(tx({ isExpired: true, snapshotTime: D('2026-01-20') }))).toBe(D('2026-01-20'));
    expect(accessEnd(tx({ isExpired: true, snapshotTime: D('2026-02-03') }))).toBe(D('2026-02-01'));
  });

  it('4. billing retry with a grace period beyond the expiration: the grace end', () => {
    expect(accessEnd(tx({ isBillingRetryPeriod: true, gracePeriodExpirationDate: D('2026-02-17') }))).toBe(D('2026-02-17'));
    // no grace period, or one that is not later, or not in billing retry: the expiration
    expect(accessEnd(tx({ isBillingRetryPeriod: true }))).toBe(D('2026-02-01'));
    expect(accessEnd(tx({ isBillingRetryPeriod: true, gracePeriodExpirationDate: D('2026-01-25') }))).toBe(D('2026-02-01'));
    expect(accessEnd(tx({ gracePeriodExpirationDate: D('2026-02-17') }))).toBe(D('2026-02-01'));
  });

  it('5. otherwise the expiration; no expiration (consumables, non-consumables): never', () => {
    expect(accessEnd(tx({}))).toBe(D('2026-02-01'));
    expect(accessEnd(tx({ expirationDate: null }))).toBeNull();
  });
});

describe('summarizeCustomer', () => {
  it('no transactions: nothing but a zero count', () => {
    expect(summarizeCustomer([])).toEqual({
      transactionCount: 0,
      lastPurchaseDate: null,
      expirationDate: null,
      lastRenewalDate: null,
      renewalIntent: null,
      productId: null,
      graceFrom: null,
      billingRetry: false,
    });
  });

  it('a refunded yearly does not hide an active monthly', () => {
    const yearly = tx({
      transactionId: 'apple:y',
      expirationDate: D('2027-01-05'),
      revocationDate: D('2026-02-01'),
      isExpired: true,
      renewalIntent: 'Lapse',
      transactionDate: D('2026-01-05'),
    });
    const monthly = tx({ transactionId: 'apple:m', transactionDate: D('2026-03-01'), lastRenewalDate: D('2026-03-01'), expirationDate: D('2026-04-01') });
    expect(summarizeCustomer([yearly, monthly])).toEqual({
      transactionCount: 2,
      lastPurchaseDate: D('2026-03-01'),
      expirationDate: D('2026-04-01'),
      lastRenewalDate: D('2026-03-01'),
      renewalIntent: 'Renew',
      productId: 'apple:monthly',
      graceFrom: null,
      billingRetry: false,
    });
  });

  it('an upgraded yearly is not current while the monthly replacing it exists, even if it expires later', () => {
    const yearly = tx({ transactionId: 'apple:y', expirationDate: D('2027-01-01'), isUpgraded: true, renewalIntent: 'Renew' });
    const monthly = tx({ transactionId: 'apple:m', transactionDate: D('2026-01-15'), expirationDate: D('2026-02-15'), renewalIntent: 'Lapse' });
    expect(summarizeCustomer([yearly, monthly])).toMatchObject({ expirationDate: D('2026-02-15'), renewalIntent: 'Lapse' });
  });

  it('when every subscription is replaced, the latest replaced one is current', () => {
    const a = tx({ transactionId: 'apple:a', expirationDate: D('2026-02-01'), cancelationReason: 'System.Replaced' });
    const b = tx({ transactionId: 'apple:b', expirationDate: D('2026-03-01'), isUpgraded: true, renewalIntent: 'Lapse' });
    expect(summarizeCustomer([a, b])).toMatchObject({ expirationDate: D('2026-03-01'), renewalIntent: 'Lapse' });
  });

  it('pending purchases grant nothing and are not purchases yet', () => {
    const pending = tx({ transactionId: 'apple:p', isPending: true, transactionDate: D('2026-05-01'), expirationDate: D('2026-06-01') });
    expect(summarizeCustomer([pending])).toEqual({
      transactionCount: 1,
      lastPurchaseDate: null,
      expirationDate: null,
      lastRenewalDate: null,
      renewalIntent: null,
      productId: null,
      graceFrom: null,
      billingRetry: false,
    });
  });

  it('a grace period extends the expiration the customer sees', () => {
    const retry = tx({ isBillingRetryPeriod: true, gracePeriodExpirationDate: D('2026-02-17'), lastRenewalDate: D('2026-01-01') });
    // the status facts: from its own expiration on, access lasts only by the grace period; billing is retried
    expect(summarizeCustomer([retry])).toMatchObject({ productId: 'apple:monthly', graceFrom: D('2026-02-01'), billingRetry: true });
    expect(summarizeCustomer([retry])).toMatchObject({ expirationDate: D('2026-02-17'), lastRenewalDate: D('2026-01-01') });
  });

  it('consumables count as purchases but never as a subscription', () => {
    const coins = tx({ transactionId: 'apple:c', expirationDate: null, transactionDate: D('2026-07-01'), renewalIntent: null });
    expect(summarizeCustomer([coins])).toEqual({
      transactionCount: 1,
      lastPurchaseDate: D('2026-07-01'),
      expirationDate: null,
      lastRenewalDate: null,
      renewalIntent: null,
      productId: null,
      graceFrom: null,
      billingRetry: false,
    });
  });

  it('ties on access end go to the later transaction date, then the greater transactionId (byte order)', () => {
    const a = tx({ transactionId: 'apple:B', transactionDate: D('2026-01-02'), renewalIntent: 'Renew' });
    const b = tx({ transactionId: 'apple:a', transactionDate: D('2026-01-01'), renewalIntent: 'Lapse' });
    expect(summarizeCustomer([b, a]).renewalIntent).toBe('Renew');
    const c = tx({ transactionId: 'apple:B', renewalIntent: 'Renew' });
    const d = tx({ transactionId: 'apple:a', renewalIntent: 'Lapse' });
    expect(summarizeCustomer([c, d]).renewalIntent).toBe('Lapse'); // 'a' (0x61) > 'B' (0x42)
  });
});

describe('extendSummary', () => {
  // what summarizeCustomer stores for one monthly purchase (tested above), written out
  const stored = {
    transactionCount: 1,
    lastPurchaseDate: D('2026-01-01'),
    expirationDate: D('2026-02-01'),
    lastRenewalDate: null,
    renewalIntent: 'Renew',
    productId: 'apple:monthly',
    graceFrom: null,
    billingRetry: false,
  };

  it('a renewal (not replaced, ending later) decides alone', () => {
    const renewal = tx({
      transactionId: 'apple:t2',
      transactionDate: D('2026-02-01'),
      expirationDate: D('2026-03-01'),
      lastRenewalDate: D('2026-02-01'),
      renewalIntent: 'Lapse',
    });
    expect(extendSummary(stored, [renewal])).toEqual({
      transactionCount: 2,
      lastPurchaseDate: D('2026-02-01'),
      expirationDate: D('2026-03-01'),
      lastRenewalDate: D('2026-02-01'),
      renewalIntent: 'Lapse',
      productId: 'apple:monthly',
      graceFrom: null,
      billingRetry: false,
    });
  });

  it('a consumable or a pending purchase leaves the subscription as it was', () => {
    const consumable = tx({ transactionId: 'apple:c', transactionDate: D('2026-01-20'), expirationDate: null, renewalIntent: null });
    const pending = tx({ transactionId: 'apple:p', transactionDate: D('2026-01-25'), expirationDate: D('2027-01-01'), isPending: true });
    expect(extendSummary(stored, [consumable, pending])).toEqual({ ...stored, transactionCount: 3, lastPurchaseDate: D('2026-01-20') });
  });

  it('cannot decide when the stored facts do not say which subscription was current', () => {
    // ends earlier: the stored one might be a replaced subscription, which any live one beats
    expect(extendSummary(stored, [tx({ transactionId: 'apple:t2', expirationDate: D('2026-01-15') })])).toBeUndefined();
    // ends at the same instant: the tie goes by date and id, which are not stored
    expect(extendSummary(stored, [tx({ transactionId: 'apple:t2', expirationDate: D('2026-02-01') })])).toBeUndefined();
    // replaced: never current while a live one exists, and whether one does is not stored
    expect(extendSummary(stored, [tx({ transactionId: 'apple:t2', expirationDate: D('2027-01-01'), isUpgraded: true })])).toBeUndefined();
  });

  it('with nothing stored, the added ones decide', () => {
    const first = tx({ transactionId: 'apple:t1', isUpgraded: true, expirationDate: D('2026-05-01') });
    const nothing = {
      transactionCount: 0,
      lastPurchaseDate: null,
      expirationDate: null,
      lastRenewalDate: null,
      renewalIntent: null,
      productId: null,
      graceFrom: null,
      billingRetry: false,
    };
    expect(extendSummary(nothing, [first])).toEqual({
      transactionCount: 1,
      lastPurchaseDate: D('2026-01-01'),
      expirationDate: D('2026-05-01'),
      lastRenewalDate: null,
      renewalIntent: 'Renew',
      productId: 'apple:monthly',
      graceFrom: null,
      billingRetry: false,
    });
  });

  // Two implementations of one rule held equal (the incremental one under test, the full derivation
  // checked above with values written out): whenever it answers, it answers what summarizing every
  // transaction does.
  it('agrees with summarizeCustomer over the whole list whenever it decides', () => {
    const transaction = lifecycleTransaction;
    let decided = 0;
    fc.assert(
      fc.property(fc.array(transaction, { maxLength: 6 }), fc.array(transaction, { minLength: 1, maxLength: 4 }), (before, added) => {
        const extended = extendSummary(summarizeCustomer(before), added);
        if (extended === undefined) return;
        decided++;
        expect(extended).toEqual(summarizeCustomer([...before, ...added]));
      }),
      { numRuns: 2000 },
    );
    expect(decided).toBeGreaterThan(500);
  });
});

// Rule 2, replaced by another transaction (issue 21): the shapes Apple sends. An upgrade or a
// same-duration crossgrade starts the new product's transaction at once, in the same subscription
// (same originalTransactionId: same receipt and purchase); a downgrade or an other-duration
// crossgrade starts it at the renewal, dated at the old one's expiration.
describe('replacement by another transaction of the same subscription', () => {
  const yearly = tx({ transactionId: 'apple:y1', productId: 'apple:yearly', transactionDate: D('2026-01-10'), expirationDate: D('2027-01-10') });
  const upgrade = tx({
    transactionId: 'apple:m1',
    productId: 'apple:pro_monthly',
    transactionDate: D('2026-06-01'),
    lastRenewalDate: D('2026-06-01'),
    expirationDate: D('2026-07-01'),
  });

  it('given a yearly, when a monthly of another product is charged in its year, then the yearly ends then and the monthly is current', () => {
    for (const history of [
      [yearly, upgrade],
      [upgrade, yearly],
    ]) {
      expect(replacements(history)).toEqual(new Map([[yearly, D('2026-06-01')]]));
      expect(accessEnd(yearly, D('2026-06-01'))).toBe(D('2026-06-01'));
      expect(summarizeCustomer(history)).toEqual({
        transactionCount: 2,
        lastPurchaseDate: D('2026-06-01'),
        expirationDate: D('2026-07-01'),
        lastRenewalDate: D('2026-06-01'),
        renewalIntent: 'Renew',
        productId: 'apple:pro_monthly',
        graceFrom: null,
        billingRetry: false,
      });
    }
  });

  it('a crossgrade to the same duration is the same: the old one ends when the new one starts', () => {
    const basic = tx({ transactionId: 'apple:b1', productId: 'apple:basic_monthly', transactionDate: D('2026-05-20'), expirationDate: D('2026-06-20') });
    const plus = tx({
      transactionId: 'apple:p1',
      productId: 'apple:plus_monthly',
      transactionDate: D('2026-06-01'),
      lastRenewalDate: D('2026-06-01'),
      expirationDate: D('2026-07-01'),
    });
    expect(replacements([plus, basic])).toEqual(new Map([[basic, D('2026-06-01')]]));
    expect(summarizeCustomer([plus, basic]).expirationDate).toBe(D('2026-07-01'));
  });

  it('given a downgrade taking effect at the renewal, then nothing is replaced: the yearly runs out and the monthly follows', () => {
    const renewal = tx({
      transactionId: 'apple:m2',
      productId: 'apple:basic_monthly',
      transactionDate: D('2027-01-10'),
      lastRenewalDate: D('2027-01-10'),
      expirationDate: D('2027-02-10'),
    });
    expect(replacements([yearly, renewal]).size).toBe(0);
    expect(summarizeCustomer([renewal, yearly])).toMatchObject({ expirationDate: D('2027-02-10'), lastRenewalDate: D('2027-01-10') });
    // asked before the renewal: the yearly is current until its expiration
    expect(summarizeCustomer([yearly]).expirationDate).toBe(D('2027-01-10'));
  });

  it('a renewal of the same product, a purchase after the old one ended, another purchase or a pending one replace nothing', () => {
    const sameProduct = tx({ transactionId: 'apple:y2', productId: 'apple:yearly', transactionDate: D('2026-06-01'), expirationDate: D('2027-06-01') });
    const afterEnd = tx({ ...upgrade, transactionId: 'apple:m3', transactionDate: D('2027-02-01'), expirationDate: D('2027-03-01') });
    const otherPurchase = tx({ ...upgrade, transactionId: 'apple:m4', purchaseId: 'apple:r9', receiptId: 'apple:r9' });
    const pending = tx({ ...upgrade, transactionId: 'apple:m5', isPending: true });
    const refunded = tx({ ...yearly, transactionId: 'apple:y3', revocationDate: D('2026-03-01'), isExpired: true });
    for (const other of [sameProduct, afterEnd, otherPurchase, pending]) expect(replacements([yearly, other]).size).toBe(0);
    expect(replacements([refunded, upgrade]).size).toBe(0);
  });

  it('a transaction the store marked replaced itself also ends at its replacement', () => {
    const marked = { ...yearly, isUpgraded: true, cancelationReason: 'System.Replaced' };
    expect(replacements([marked, upgrade])).toEqual(new Map([[marked, D('2026-06-01')]]));
    expect(summarizeCustomer([marked]).expirationDate).toBe(D('2027-01-10'));
  });

  it('extendSummary: an old transaction arriving after its replacement does not decide alone', () => {
    expect(extendSummary(summarizeCustomer([upgrade]), [yearly])).toBeUndefined();
    // and the new one arriving after the old: its access ends before the yearly's, so the whole list decides
    expect(extendSummary(summarizeCustomer([yearly]), [upgrade])).toBeUndefined();
  });
});
