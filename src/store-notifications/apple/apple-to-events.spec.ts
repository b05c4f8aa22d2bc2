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
    expect(event.data).toMatchObject({ transactionId: 'apple:1000000001', productId: 'apple:pro_yearly', expirationDate: '2027-01-10T00:00:00.000Z', renewalIntent: 'Renew' });
    expect(event.data.isUpgraded).toBeUndefined();
    expect(event.data.lastRenewalDate).toBeUndefined();
  });

  it('given the old transaction with isUpgraded (as the transaction history shows it), then it is marked replaced', () => {
    const [event] = appleToEvents('app', notification('REFUND'), { ...yearly, isUpgraded: true, revocationDate: ms('2026-06-01T00:00:00Z'), revocationReason: 0 }, undefined);
    expect(event.data).toMatchObject({ isUpgraded: true, cancelationReason: 'System.Replaced', isExpired: true });
  });

  it('given a CONSUMPTION_REQUEST (a refund request: nothing changed yet), then nothing is published', () => {
    expect(appleToEvents('app', notification('CONSUMPTION_REQUEST'), yearly, undefined)).toEqual([]);
  });
});
