import type { androidpublisher_v3 } from '@googleapis/androidpublisher';
import { decodeEvent } from '../../events/decode-event.js';
import { projectEvents } from '../../projection/project-events.js';
import { googleSubscriptionEvents, googleVoidedEvents, googleVoidRefund } from './google-to-events.js';

// given / when / then over the Google mapping, through the event contract (decodeEvent) and the
// pure projection (projectEvents), to where each order is filed.
//
// Payload shapes: SubscriptionPurchaseV2 as purchases.subscriptionsv2.get returns it (androidpublisher
// v3 reference, @googleapis/androidpublisher Schema$SubscriptionPurchaseV2: lineItems[].productId,
// expiryTime, latestSuccessfulOrderId, autoRenewingPlan). Order numbers as Google documents them
// ("Subscription order numbers"): GPA.1234-5678-9012-34567 (base order), ..0 (first recurrence),
// ..1 (second recurrence), ...

const BASE = 'GPA.1234-5678-9012-34567';
const START = '2026-01-10T09:00:00.000Z';

function state(orderId: string, expiryTime: string): androidpublisher_v3.Schema$SubscriptionPurchaseV2 {
  return {
    kind: 'androidpublisher#subscriptionPurchaseV2',
    regionCode: 'US',
    startTime: START,
    subscriptionState: 'SUBSCRIPTION_STATE_ACTIVE',
    acknowledgementState: 'ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED',
    externalAccountIdentifiers: { obfuscatedExternalAccountId: 'user-g' },
    lineItems: [
      {
        productId: 'pro_monthly',
        expiryTime,
        autoRenewingPlan: { autoRenewEnabled: true, recurringPrice: { currencyCode: 'USD', units: '4', nanos: 990000000 } },
        offerDetails: { basePlanId: 'monthly', offerTags: [] },
        latestSuccessfulOrderId: orderId,
      },
    ],
  };
}

/** The transaction.updated of a fetch, as the consumer decodes it (the contract's schema applies). */
function fetched(messageId: string, orderId: string, expiryTime: string, fetchedAt: string) {
  const [event] = googleSubscriptionEvents('app', messageId, 'tok-1', state(orderId, expiryTime), new Date(fetchedAt));
  const decoded = decodeEvent(JSON.stringify(event), { receivedAt: Date.parse(fetchedAt) });
  if (!decoded.ok || decoded.event.type !== 'transaction.updated') throw new Error(decoded.ok ? 'not a transaction.updated' : decoded.reason);
  return decoded.event;
}

describe('googleSubscriptionEvents: order numbers', () => {
  // Each order is fetched seconds after its charge (the RTDN that announced it: PURCHASED, then RENEWED).
  const first = fetched('m1', BASE, '2026-02-10T09:00:00.000Z', '2026-01-10T09:00:04.000Z');
  const firstRenewal = fetched('m2', `${BASE}..0`, '2026-03-10T09:00:00.000Z', '2026-02-10T09:00:05.000Z');
  const secondRenewal = fetched('m3', `${BASE}..1`, '2026-04-10T09:00:00.000Z', '2026-03-10T09:00:03.000Z');

  it('given the first order GPA.x, then it is dated at the subscription start', () => {
    expect(first.data).toMatchObject({ transactionId: `google:${BASE}`, purchaseId: `google:${BASE}` });
    expect(Date.parse(first.data.purchaseDate!)).toBe(Date.parse(START));
  });

  it('given GPA.x..0, then it is the first renewal: an order of the same purchase, with no purchase date of its own', () => {
    expect(firstRenewal.data).toMatchObject({ transactionId: `google:${BASE}..0`, purchaseId: `google:${BASE}` });
    expect(firstRenewal.data.purchaseDate).toBeUndefined();
    expect(secondRenewal.data).toMatchObject({ transactionId: `google:${BASE}..1`, purchaseId: `google:${BASE}` });
    expect(secondRenewal.data.purchaseDate).toBeUndefined();
  });

  it('when all three are projected, in any order, then each is filed on the day it was charged', () => {
    const filed = (events: ReturnType<typeof fetched>[]) =>
      Object.fromEntries(projectEvents(events).transactions.map((t) => [t.transaction_id, t.occurred_at.slice(0, 10)]));
    const expected = { [`google:${BASE}`]: '2026-01-10', [`google:${BASE}..0`]: '2026-02-10', [`google:${BASE}..1`]: '2026-03-10' };
    expect(filed([first, firstRenewal, secondRenewal])).toEqual(expected);
    expect(filed([secondRenewal, firstRenewal, first])).toEqual(expected);
  });

  it('when the first renewal is fetched again later (a CANCELED after it), then it stays filed at its first fetch', () => {
    const later = fetched('m4', `${BASE}..0`, '2026-03-10T09:00:00.000Z', '2026-02-20T12:00:00.000Z');
    const rows = projectEvents([later, firstRenewal]).transactions;
    expect(rows).toHaveLength(1);
    expect(rows[0].occurred_at.slice(0, 10)).toBe('2026-02-10');
  });
});

// Voids and partial refunds. voidedpurchases.list (androidpublisher v3 reference, Schema$VoidedPurchase)
// returns, with includeQuantityBasedPartialRefund, "voidedQuantity: the voided quantity as the result
// of a quantity-based partial refund"; ProductPurchase.quantity: "if not present, the quantity is 1".
// The stored order is a one-time product row as the read models hold it (storedTransaction).
describe('googleVoidRefund / googleVoidedEvents: partial refunds', () => {
  const coins = {
    transactionId: 'google:GPA.3333-2222-0000-00001',
    purchaseId: 'google:GPA.3333-2222-0000-00001',
    productId: 'google:coins_500',
    platform: 'google',
    receiptId: 'google:tok-coins',
    sandbox: false,
    purchaseDate: '2026-05-20T10:00:00.000Z',
    isAcknowledged: true,
    isConsumed: true,
    quantity: 3,
  };

  it('given no voidedQuantity (a whole void), then REFUND_FULL without a share', () => {
    expect(googleVoidRefund(undefined, coins)).toEqual({ revocationType: 'REFUND_FULL' });
    expect(googleVoidRefund(null, coins)).toEqual({ revocationType: 'REFUND_FULL' });
  });

  it('given 1 of 3 units voided, then REFUND_PRORATED with refundedShare 1/3', () => {
    expect(googleVoidRefund(1, coins)).toEqual({ revocationType: 'REFUND_PRORATED', refundedShare: 1 / 3 });
  });

  it('given 2 of 4 units voided, then refundedShare 0.5', () => {
    expect(googleVoidRefund(2, { ...coins, quantity: 4 })).toEqual({ revocationType: 'REFUND_PRORATED', refundedShare: 0.5 });
  });

  it('given an order already refunded 1 of 3 units, when 1 more is voided, then 2 of 3 are refunded; when the last one is, REFUND_FULL', () => {
    const once = { ...coins, revocationDate: '2026-05-21T00:00:00.000Z', revocationType: 'REFUND_PRORATED', refundedShare: 1 / 3 };
    expect(googleVoidRefund(1, once)).toEqual({ revocationType: 'REFUND_PRORATED', refundedShare: 2 / 3 });
    expect(googleVoidRefund(1, { ...once, refundedShare: 2 / 3 })).toEqual({ revocationType: 'REFUND_FULL' });
  });

  it('given every unit voided at once, or more, then REFUND_FULL', () => {
    expect(googleVoidRefund(3, coins)).toEqual({ revocationType: 'REFUND_FULL' });
    expect(googleVoidRefund(5, coins)).toEqual({ revocationType: 'REFUND_FULL' });
  });

  it('given a stored order without quantity (bought once), then any void refunds all of it', () => {
    const { quantity: _, ...once } = coins;
    expect(googleVoidRefund(1, once)).toEqual({ revocationType: 'REFUND_FULL' });
  });

  it.each([[0], [-1], [1.5]])('given voidedQuantity %d (no count of units), then it is skipped with the reason', (voidedQuantity) => {
    expect(googleVoidRefund(voidedQuantity, coins)).toEqual({ skip: `voidedQuantity ${voidedQuantity} is not a count of units` });
  });

  const decoded = (stored: Record<string, unknown>, refund: Parameters<typeof googleVoidedEvents>[5]) => {
    const [event] = googleVoidedEvents('app', 'google-voided:x', stored, new Date('2026-05-22T08:00:00Z'), new Date('2026-05-22T08:05:00Z'), refund);
    const d = decodeEvent(JSON.stringify(event), { receivedAt: Date.parse('2026-05-22T08:05:01Z') });
    if (!d.ok || d.event.type !== 'transaction.updated') throw new Error(d.ok ? 'not a transaction.updated' : d.reason);
    return d.event.data;
  };

  it('when a partial refund is published, then the stored order, revoked then, with REFUND_PRORATED and its share (the contract accepts it)', () => {
    expect(decoded(coins, { revocationType: 'REFUND_PRORATED', refundedShare: 1 / 3 })).toMatchObject({
      transactionId: 'google:GPA.3333-2222-0000-00001',
      productId: 'google:coins_500',
      quantity: 3,
      revocationDate: '2026-05-22T08:00:00.000000Z',
      isExpired: true,
      cancelationReason: 'Customer',
      revocationType: 'REFUND_PRORATED',
      refundedShare: 1 / 3,
    });
  });

  it('when a whole void follows a partial refund, then REFUND_FULL and the earlier share is gone (all of it)', () => {
    const once = { ...coins, revocationDate: '2026-05-21T00:00:00.000Z', revocationType: 'REFUND_PRORATED', refundedShare: 1 / 3 };
    const data = decoded(once, { revocationType: 'REFUND_FULL' });
    expect(data).toMatchObject({ revocationType: 'REFUND_FULL', revocationDate: '2026-05-22T08:00:00.000000Z' });
    expect(data).not.toHaveProperty('refundedShare');
  });
});
