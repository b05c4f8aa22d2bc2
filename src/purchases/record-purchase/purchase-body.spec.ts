import { InvalidParameterError } from '../../common/errors.js';
import { parsePurchaseBody } from './purchase-body.js';

const JWS = 'eyJhbGciOiJFUzI1NiJ9.eyJ0cmFuc2FjdGlvbklkIjoiMSJ9.c2ln';
const refusal = (body: unknown) => {
  try {
    parsePurchaseBody(body);
  } catch (error) {
    if (error instanceof InvalidParameterError) return { parameter: error.parameter, message: error.message };
    throw error;
  }
  throw new Error('accepted');
};

describe('parsePurchaseBody', () => {
  it('takes each source with its platform', () => {
    expect(parsePurchaseBody({ signedTransaction: JWS, applicationUsername: 'a@example.com' })).toEqual({
      source: { platform: 'apple', signedTransaction: JWS },
      applicationUsername: 'a@example.com',
    });
    expect(parsePurchaseBody({ transactionId: '2000000123', platform: 'apple' })).toEqual({ source: { platform: 'apple', transactionId: '2000000123' } });
    expect(parsePurchaseBody({ appReceipt: 'MIIT\nuAYJ==' })).toEqual({ source: { platform: 'apple', appReceipt: 'MIIT\nuAYJ==' } });
    expect(parsePurchaseBody({ purchaseToken: 'abc.def-1', productId: 'coins_100' })).toEqual({
      source: { platform: 'google', purchaseToken: 'abc.def-1', productId: 'coins_100' },
    });
  });

  it('names the field of every refusal', () => {
    expect(refusal('x')).toEqual({ parameter: 'body', message: expect.stringContaining('JSON object') });
    expect(refusal({})).toEqual({ parameter: 'body', message: 'give one of signedTransaction, transactionId, appReceipt, purchaseToken' });
    expect(refusal({ signedTransaction: JWS, transactionId: '1' })).toEqual({
      parameter: 'transactionId',
      message: 'give one of signedTransaction, transactionId, appReceipt, purchaseToken, not signedTransaction and transactionId',
    });
    expect(refusal({ signedTransaction: JWS, platform: 'google' })).toEqual({
      parameter: 'platform',
      message: 'signedTransaction is an App Store field, not google',
    });
    expect(refusal({ transactionId: '12a' })).toMatchObject({ parameter: 'transactionId' });
    expect(refusal({ signedTransaction: 'a.b' })).toMatchObject({ parameter: 'signedTransaction' });
    expect(refusal({ appReceipt: '***' })).toMatchObject({ parameter: 'appReceipt' });
    expect(refusal({ purchaseToken: 'has space' })).toMatchObject({ parameter: 'purchaseToken' });
    expect(refusal({ purchaseToken: 'ok', productId: '-bad' })).toMatchObject({ parameter: 'productId' });
    expect(refusal({ transactionId: '1', productId: 'coins' })).toEqual({ parameter: 'productId', message: 'productId goes with a Google purchaseToken only' });
    expect(refusal({ transactionId: '1', applicationUsername: '' })).toEqual({
      parameter: 'applicationUsername',
      message: 'applicationUsername must be a non-empty string',
    });
    expect(refusal({ transactionId: '1', applicationUsername: 'x'.repeat(513) })).toMatchObject({ parameter: 'applicationUsername' });
    expect(refusal({ transactionId: '1', __proto__x: 1 })).toMatchObject({ parameter: '__proto__x' });
    expect(refusal({ transactionId: 1 })).toEqual({ parameter: 'transactionId', message: 'transactionId must be a non-empty string' });
  });
});
