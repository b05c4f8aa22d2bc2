import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { InvalidParameterError } from '../../common/errors.js';
import { PurchaseError } from '../purchase.errors.js';
import { ErrorCode } from '../../common/errors.js';
import { parseValidatorBody, validatorFailure, validatorSuccess } from './validator-protocol.js';

// Request bodies as cordova-plugin-purchase 13.18.0 builds them (test/fixtures/cordova-validator/README.md).
const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../test/fixtures/cordova-validator');
const fixture = (name: string, replace: Record<string, string>) => {
  let text = readFileSync(path.join(fixtures, name), 'utf8');
  for (const [from, to] of Object.entries(replace)) text = text.replaceAll(from, to);
  return JSON.parse(text) as Record<string, unknown>;
};
const JWS = 'eyJhbGciOiJFUzI1NiJ9.eyJ0cmFuc2FjdGlvbklkIjoiMSJ9.c2ln';

describe('the cordova-plugin-purchase validator protocol', () => {
  it("reads each transaction type of the plugin's bodies onto a purchase, with additionalData.applicationUsername", () => {
    expect(parseValidatorBody(fixture('apple-storekit2.json', { SIGNED_TRANSACTION: JWS }))).toEqual({
      purchase: { source: { platform: 'apple', signedTransaction: JWS }, applicationUsername: 'user@example.com' },
      id: 'com.example.app',
      transactionType: 'apple-sk2',
    });
    expect(parseValidatorBody(fixture('apple-storekit1.json', { APP_RECEIPT: 'MIIT' }))).toEqual({
      purchase: { source: { platform: 'apple', appReceipt: 'MIIT' }, applicationUsername: 'user@example.com' },
      id: 'com.example.app',
      transactionType: 'ios-appstore',
    });
    expect(parseValidatorBody(fixture('google.json', { PURCHASE_TOKEN: 'tok.1' }))).toEqual({
      purchase: { source: { platform: 'google', purchaseToken: 'tok.1' }, applicationUsername: 'user@example.com' },
      id: 'premium_monthly',
      transactionType: 'android-playstore',
    });
    const consumable = { ...fixture('google.json', { PURCHASE_TOKEN: 'tok.2', premium_monthly: 'coins_100' }), type: 'consumable' };
    expect(parseValidatorBody(consumable).purchase.source).toEqual({ platform: 'google', purchaseToken: 'tok.2', productId: 'coins_100' });
  });

  it('refuses what carries no purchase, naming the field', () => {
    const refusal = (body: unknown) => {
      try {
        parseValidatorBody(body);
      } catch (error) {
        if (error instanceof InvalidParameterError) return [error.parameter, error.message];
      }
      return undefined;
    };
    expect(refusal({ id: 'x' })).toEqual(['transaction', 'transaction is required: the native transaction to validate']);
    expect(refusal({ transaction: { type: 'braintree' } })).toEqual([
      'transaction.type',
      'transaction.type must be apple-sk2, ios-appstore or android-playstore (got "braintree")',
    ]);
    expect(refusal({ transaction: { type: 'apple-sk2', id: 'p' } })).toEqual(['signedTransaction', 'the apple-sk2 transaction carries no jwsRepresentation']);
    expect(refusal({ transaction: { type: 'ios-appstore', appStoreReceipt: '' } })).toEqual(['appReceipt', 'appReceipt must be a non-empty string']);
  });

  it("answers one VerifiedPurchase per purchase from its latest transaction, in the plugin's terms, expired or not at the answer's instant", () => {
    const request = parseValidatorBody(fixture('apple-storekit2.json', { SIGNED_TRANSACTION: JWS }));
    const d = (iso: string) => new Date(iso);
    const base = {
      purchaseId: 'apple:100',
      receiptId: 'apple:100',
      productId: 'apple:com.example.app.premium.monthly',
      platform: 'apple',
      purchaseDate: d('2026-09-01T00:00:00Z'),
    };
    const answer = validatorSuccess(
      request,
      [
        { ...base, transactionId: 'apple:100', expirationDate: d('2026-10-01T00:00:00Z') },
        {
          ...base,
          transactionId: 'apple:101',
          lastRenewalDate: d('2026-10-01T00:00:00Z'),
          expirationDate: d('2026-11-01T00:00:00Z'),
          isBillingRetryPeriod: true,
          gracePeriodExpirationDate: d('2026-11-17T00:00:00Z'),
          renewalIntent: 'Renew',
          priceConsentStatus: 'Accepted',
          quantity: 1,
        },
        {
          purchaseId: 'apple:200',
          receiptId: 'apple:100',
          productId: 'apple:coins',
          platform: 'apple',
          transactionId: 'apple:200',
          purchaseDate: d('2026-09-02T00:00:00Z'),
          revocationDate: d('2026-09-03T00:00:00Z'),
        },
      ],
      d('2026-11-10T00:00:00Z'),
    );
    expect(answer).toEqual({
      ok: true,
      data: {
        id: 'com.example.app',
        latest_receipt: true,
        transaction: { type: 'apple-sk2' },
        date: '2026-11-10T00:00:00.000Z',
        collection: [
          {
            id: 'com.example.app.premium.monthly',
            platform: 'ios-appstore',
            purchaseId: '100',
            transactionId: '101',
            purchaseDate: Date.parse('2026-09-01T00:00:00Z'),
            // in billing retry with a grace period: access lasts to the grace end (docs/api.md rule 4)
            expiryDate: Date.parse('2026-11-17T00:00:00Z'),
            isExpired: false,
            isBillingRetryPeriod: true,
            renewalIntent: 'Renew',
            priceConsentStatus: 'Agreed',
            lastRenewalDate: Date.parse('2026-10-01T00:00:00Z'),
            quantity: 1,
          },
          { id: 'coins', platform: 'ios-appstore', purchaseId: '200', transactionId: '200', purchaseDate: Date.parse('2026-09-02T00:00:00Z'), isExpired: true },
        ],
      },
    });
  });

  it("answers a refusal as the plugin's error payload, with the status POST /v2/purchases would have used", () => {
    expect(validatorFailure(new PurchaseError(ErrorCode.PurchaseUnverified, 'signedTransaction failed verification'), 422)).toEqual({
      ok: false,
      status: 422,
      code: 6777017,
      message: 'signedTransaction failed verification',
      data: { latest_receipt: true },
    });
    expect(validatorFailure(new PurchaseError(ErrorCode.ReceiptOwnedByAnotherUser, 'x'), 409)).toMatchObject({ code: 6777007 });
  });
});
