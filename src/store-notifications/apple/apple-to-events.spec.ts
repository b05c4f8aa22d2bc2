import { decodeEvent } from '../../events/decode-event.js';
import { appleToEvents, type AppleNotification, type AppleRenewalInfo, type AppleTransaction } from './apple-to-events.js';

// given / when / then over the App Store mapping. Payload shapes: ResponseBodyV2DecodedPayload,
// JWSTransactionDecodedPayload and JWSRenewalInfoDecodedPayload as app-store-server-library-node
// models them (tests/resources/models/signedNotification.json, signedTransaction.json,
// signedRenewalInfo.json), with the values of an upgrade as Apple's docs describe it: the new
// transaction of the same subscription (same originalTransactionId), transactionReason PURCHASE.

const ms = (iso: string) => Date.parse(iso);
const notification = (notificationType: string, subtype?: string): AppleNotification => ({
  notificationType,
  subtype,
  notificationUUID: '002e14d5-51f5-4503-b5a8-c3a1af68eb20',
  signedDate: ms('2026-06-01T00:00:02Z'),
  data: { environment: 'Production', bundleId: 'com.example', status: 1 },
});
const yearly: AppleTransaction = {
  transactionId: '1000000001',
  originalTransactionId: '1000000001',
  productId: 'pro_yearly',
  purchaseDate: ms('2026-01-10T00:00:00Z'),
  originalPurchaseDate: ms('2026-01-10T00:00:00Z'),
  expiresDate: ms('2027-01-10T00:00:00Z'),
  quantity: 1,
  type: 'Auto-Renewable Subscription',
  environment: 'Production',
  transactionReason: 'PURCHASE',
  price: 49990,
  currency: 'USD',
};
const monthly: AppleTransaction = {
  ...yearly,
  transactionId: '1000000002',
  productId: 'pro_max_monthly',
  purchaseDate: ms('2026-06-01T00:00:00Z'),
  expiresDate: ms('2026-07-01T00:00:00Z'),
  price: 9990,
};
const renewal = (productId: string, autoRenewProductId = productId): AppleRenewalInfo & Record<string, unknown> => ({
  originalTransactionId: '1000000001',
  productId,
  autoRenewProductId,
  autoRenewStatus: 1,
});

describe('appleToEvents', () => {
  it('given DID_CHANGE_RENEWAL_PREF UPGRADE, then the new transaction: same subscription, charged at its purchaseDate, not itself replaced', () => {
    const [event] = appleToEvents('app', notification('DID_CHANGE_RENEWAL_PREF', 'UPGRADE'), monthly, renewal('pro_max_monthly'));
    expect(event.data).toEqual({
      transactionId: 'apple:1000000002',
      purchaseId: 'apple:1000000001',
      receiptId: 'apple:1000000001',
      productId: 'apple:pro_max_monthly',
      platform: 'apple',
      sandbox: false,
      purchaseDate: '2026-01-10T00:00:00.000Z',
      lastRenewalDate: '2026-06-01T00:00:00.000Z',
      expirationDate: '2026-07-01T00:00:00.000Z',
      renewalIntent: 'Renew',
      quantity: 1,
      amountMicros: 9990000,
      currency: 'USD',
    });
  });

  it('given DID_CHANGE_RENEWAL_PREF DOWNGRADE, then the current transaction again, unchanged until the renewal', () => {
    const [event] = appleToEvents('app', notification('DID_CHANGE_RENEWAL_PREF', 'DOWNGRADE'), yearly, renewal('pro_yearly', 'basic_monthly'));
    expect(event.data).toMatchObject({
      transactionId: 'apple:1000000001',
      productId: 'apple:pro_yearly',
      expirationDate: '2027-01-10T00:00:00.000Z',
      renewalIntent: 'Renew',
    });
    expect(event.data.isUpgraded).toBeUndefined();
    expect(event.data.lastRenewalDate).toBeUndefined();
  });

  it('given the old transaction with isUpgraded (as the transaction history shows it), then it is marked replaced', () => {
    const [event] = appleToEvents(
      'app',
      notification('REFUND'),
      { ...yearly, isUpgraded: true, revocationDate: ms('2026-06-01T00:00:00Z'), revocationReason: 0 },
      undefined,
    );
    expect(event.data).toMatchObject({ isUpgraded: true, cancelationReason: 'System.Replaced', isExpired: true });
  });

  it('given a CONSUMPTION_REQUEST (a refund request: nothing changed yet), then nothing is published', () => {
    expect(appleToEvents('app', notification('CONSUMPTION_REQUEST'), yearly, undefined)).toEqual([]);
  });
});

// Offers and Family Sharing, as Apple documents the JWSTransactionDecodedPayload fields
// (developer.apple.com/documentation/appstoreserverapi: offerType "4: a win-back offer",
// offerDiscountType FREE_TRIAL / PAY_AS_YOU_GO / PAY_UP_FRONT / ONE_TIME, offerPeriod "an ISO 8601
// duration", inAppOwnershipType FAMILY_SHARED / PURCHASED) and app-store-server-library-node 3.1.0's
// OfferType, OfferDiscountType and InAppOwnershipType enums.
describe('appleToEvents: offers and ownership', () => {
  /** The transaction.updated as the consumer decodes it: the contract's schema applies. */
  const decoded = (type: string, t: AppleTransaction, subtype?: string) => {
    const [event] = appleToEvents('app', notification(type, subtype), t, renewal(t.productId!));
    const d = decodeEvent(JSON.stringify(event), { receivedAt: ms('2026-06-01T00:00:03Z') });
    if (!d.ok || d.event.type !== 'transaction.updated') throw new Error(d.ok ? 'not a transaction.updated' : d.reason);
    return d.event.data;
  };

  it('given SUBSCRIBED RESUBSCRIBE with a win-back offer (offerType 4), then offerType WIN_BACK, its identifier, payment mode and period', () => {
    const winBack = {
      ...monthly,
      transactionId: '1000000003',
      offerType: 4,
      offerIdentifier: 'come_back_3m',
      offerDiscountType: 'PAY_UP_FRONT',
      offerPeriod: 'P3M',
      inAppOwnershipType: 'PURCHASED',
      price: 4990,
    };
    expect(decoded('SUBSCRIBED', winBack, 'RESUBSCRIBE')).toMatchObject({
      offerType: 'WIN_BACK',
      discountId: 'come_back_3m',
      offerDiscountType: 'PAY_UP_FRONT',
      offerPeriod: 'P3M',
      ownershipType: 'PURCHASED',
      isIntroPeriod: false,
      isTrialPeriod: false,
      amountMicros: 4990000,
    });
  });

  it.each([
    [1, 'FREE_TRIAL', 'INTRODUCTORY', { isTrialPeriod: true, isIntroPeriod: false }],
    [1, 'PAY_AS_YOU_GO', 'INTRODUCTORY', { isTrialPeriod: false, isIntroPeriod: true }],
    [2, 'PAY_AS_YOU_GO', 'PROMOTIONAL', { isTrialPeriod: false, isIntroPeriod: false }],
    [3, 'ONE_TIME', 'OFFER_CODE', { isTrialPeriod: false, isIntroPeriod: false }],
  ])('given offerType %i with %s, then offerType %s and the trial/intro flags as before', (offerType, offerDiscountType, named, flags) => {
    expect(decoded('OFFER_REDEEMED', { ...yearly, offerType, offerDiscountType, offerPeriod: 'P1W' }, 'INITIAL_BUY')).toMatchObject({
      offerType: named,
      offerDiscountType,
      offerPeriod: 'P1W',
      ...flags,
    });
  });

  it("given a family member's transaction (inAppOwnershipType FAMILY_SHARED), then the row says FAMILY_SHARED and the access is mapped as any other", () => {
    const shared = { ...yearly, transactionId: '2000000001', originalTransactionId: '2000000001', inAppOwnershipType: 'FAMILY_SHARED', price: undefined };
    expect(decoded('SUBSCRIBED', shared, 'INITIAL_BUY')).toMatchObject({
      ownershipType: 'FAMILY_SHARED',
      expirationDate: '2027-01-10T00:00:00.000000Z',
      renewalIntent: 'Renew',
    });
  });

  it('given no offer and no ownership (older payloads), then none of the new fields', () => {
    const data = decoded('DID_RENEW', { ...yearly, transactionId: '1000000009' });
    for (const field of ['offerType', 'offerDiscountType', 'offerPeriod', 'ownershipType']) expect(data).not.toHaveProperty(field);
  });

  it('given values Apple may add later or garbled ones, then the known shape passes, nothing the contract would refuse is sent', () => {
    const odd = {
      ...yearly,
      offerType: 9,
      offerDiscountType: 'SOME_NEW_MODE',
      offerPeriod: 'forever and a day'.repeat(10),
      inAppOwnershipType: 'x'.repeat(300),
    };
    const data = decoded('SUBSCRIBED', odd, 'INITIAL_BUY');
    expect(data).toMatchObject({ offerDiscountType: 'SOME_NEW_MODE' });
    for (const field of ['offerType', 'offerPeriod', 'ownershipType']) expect(data).not.toHaveProperty(field);
  });

  it.each([
    ['EXTERNAL_PURCHASE_TOKEN', 'UNREPORTED'],
    ['RENEWAL_EXTENSION', 'SUMMARY'],
    ['TEST', undefined],
    ['METADATA_UPDATE', undefined],
    ['MIGRATION', undefined],
    ['RESCIND_CONSENT', undefined],
  ])('given %s (%s), then nothing is published', (type, subtype) => {
    expect(appleToEvents('app', notification(type, subtype), yearly, undefined)).toEqual([]);
  });
});

// Partial refunds, as App Store Server API 1.19 and app-store-server-library-node model them
// (models/RevocationType.ts; tests/resources/models/signedTransactionWithRevocation.json:
// "revocationType": "REFUND_PRORATED", "revocationPercentage": 50000). Apple's docs
// (appstoreservernotifications/revocationpercentage): "the percentage, in milliunits", 67.932% is
// 67932, 100% is 100000; it "doesn't appear if the refund is reversed".
describe('appleToEvents: partial refunds', () => {
  const decoded = (type: string, t: AppleTransaction) => {
    const [event] = appleToEvents('app', notification(type), t, undefined);
    const d = decodeEvent(JSON.stringify(event), { receivedAt: ms('2026-06-01T00:00:03Z') });
    if (!d.ok || d.event.type !== 'transaction.updated') throw new Error(d.ok ? 'not a transaction.updated' : d.reason);
    return d.event.data;
  };
  const refunded = { ...yearly, revocationDate: ms('2026-05-31T12:00:00Z'), revocationReason: 0 };

  it('given REFUND with REFUND_PRORATED and revocationPercentage 50000, then revocationType REFUND_PRORATED and refundedShare 0.5, access ended', () => {
    expect(decoded('REFUND', { ...refunded, revocationType: 'REFUND_PRORATED', revocationPercentage: 50000 })).toMatchObject({
      revocationDate: '2026-05-31T12:00:00.000000Z',
      revocationType: 'REFUND_PRORATED',
      refundedShare: 0.5,
      isExpired: true,
      cancelationReason: 'Customer',
    });
  });

  it.each([
    [67932, 0.67932],
    [15, 0.00015],
    [100000, 1],
    [0, 0],
  ])('given revocationPercentage %i (milliunits), then refundedShare %d', (revocationPercentage, share) => {
    expect(decoded('REFUND', { ...refunded, revocationType: 'REFUND_PRORATED', revocationPercentage })).toMatchObject({ refundedShare: share });
  });

  it('given REFUND with REFUND_FULL and no percentage, then revocationType REFUND_FULL and no refundedShare (all of it)', () => {
    const data = decoded('REFUND', { ...refunded, revocationType: 'REFUND_FULL' });
    expect(data).toMatchObject({ revocationType: 'REFUND_FULL', revocationDate: '2026-05-31T12:00:00.000000Z' });
    expect(data).not.toHaveProperty('refundedShare');
  });

  it('given REVOKE with FAMILY_REVOKE, then revocationType FAMILY_REVOKE on the family member’s transaction', () => {
    const member = { ...refunded, transactionId: '2000000001', originalTransactionId: '2000000001', inAppOwnershipType: 'FAMILY_SHARED' };
    expect(decoded('REVOKE', { ...member, revocationType: 'FAMILY_REVOKE' })).toMatchObject({
      ownershipType: 'FAMILY_SHARED',
      revocationType: 'FAMILY_REVOKE',
      isExpired: true,
    });
  });

  it.each([[100001], [-1], [12.5]])(
    'given revocationPercentage %d (no percentage in milliunits), then no refundedShare; the revocation and its type stay',
    (revocationPercentage) => {
      const data = decoded('REFUND', { ...refunded, revocationType: 'REFUND_PRORATED', revocationPercentage });
      expect(data).toMatchObject({ revocationType: 'REFUND_PRORATED', revocationDate: '2026-05-31T12:00:00.000000Z', isExpired: true });
      expect(data).not.toHaveProperty('refundedShare');
    },
  );

  it('given REFUND_REVERSED (the transaction without revocationDate), then neither revocationType nor refundedShare, even if Apple left them', () => {
    const data = decoded('REFUND_REVERSED', { ...yearly, revocationType: 'REFUND_PRORATED', revocationPercentage: 50000 });
    for (const field of ['revocationDate', 'revocationType', 'refundedShare', 'isExpired']) expect(data).not.toHaveProperty(field);
  });

  it('given a revocationType that is no upper-case word, then it is left out and the refund still ends access', () => {
    const data = decoded('REFUND', { ...refunded, revocationType: 'refund prorated'.repeat(10), revocationPercentage: 25000 });
    expect(data).toMatchObject({ refundedShare: 0.25, isExpired: true });
    expect(data).not.toHaveProperty('revocationType');
  });
});
