import type { androidpublisher_v3 } from '@googleapis/androidpublisher';
import { googleVoidedImportEvents, type StoredOrder } from './google-import.js';

// given / when / then over voidedpurchases.list entries, shaped as Google's reference gives a
// VoidedPurchase (kind, purchaseToken, purchaseTimeMillis, voidedTimeMillis, orderId, voidedSource,
// voidedReason, and voidedQuantity for a quantity-based partial refund), against the order the read
// models hold.

const ORDER = 'GPA.3333-2222-0000-00001';
const stored = (extra: Record<string, unknown> = {}): StoredOrder => ({
  snapshot: {
    transactionId: `google:${ORDER}`,
    purchaseId: `google:${ORDER}`,
    productId: 'google:coins_500',
    platform: 'google',
    receiptId: 'google:tok-coins',
    sandbox: false,
    purchaseDate: '2026-05-20T10:00:00.000Z',
    quantity: 3,
    ...extra,
  },
  versionTime: new Date('2026-05-20T10:00:05Z'),
});
const voided = (voidedTimeMillis: string, voidedQuantity?: number): androidpublisher_v3.Schema$VoidedPurchase => ({
  kind: 'androidpublisher#voidedPurchase',
  purchaseToken: 'tok-coins',
  purchaseTimeMillis: String(Date.parse('2026-05-20T10:00:00Z')),
  voidedTimeMillis,
  orderId: ORDER,
  voidedSource: 0,
  voidedReason: 1,
  ...(voidedQuantity === undefined ? {} : { voidedQuantity }),
});
const dataOf = (result: ReturnType<typeof googleVoidedImportEvents>) => {
  if (!('events' in result)) throw new Error(`skipped: ${result.skip}`);
  return (result.events[0] as unknown as { data: Record<string, unknown> }).data;
};
const MAY_21 = String(Date.parse('2026-05-21T09:00:00Z'));
const MAY_22 = String(Date.parse('2026-05-22T09:00:00Z'));

describe('googleVoidedImportEvents: whole and partial refunds', () => {
  it('given two voids of one order in one run, before the read models show the first, then the second adds to the first (2/3), in a later event', () => {
    const published = new Map<string, StoredOrder>();
    const first = googleVoidedImportEvents('app', voided(MAY_21, 1), stored(), published);
    const second = googleVoidedImportEvents('app', voided(MAY_22, 1), stored(), published);
    expect(dataOf(first)).toMatchObject({ refundedShare: 1 / 3 });
    expect(dataOf(second)).toMatchObject({ revocationDate: '2026-05-22T09:00:00.000Z', revocationType: 'REFUND_PRORATED', refundedShare: 2 / 3 });
    const times = [first, second].map((r) => ('events' in r ? (r.events[0] as unknown as { time: string }).time : ''));
    expect(times[1] > times[0]).toBe(true);
  });

  it('given a void without voidedQuantity, then the order revoked at voidedTimeMillis, REFUND_FULL', () => {
    const data = dataOf(googleVoidedImportEvents('app', voided(MAY_21), stored()));
    expect(data).toMatchObject({ revocationDate: '2026-05-21T09:00:00.000Z', revocationType: 'REFUND_FULL', isExpired: true, quantity: 3 });
    expect(data).not.toHaveProperty('refundedShare');
  });

  it('given voidedQuantity 1 of the 3 bought, then REFUND_PRORATED with refundedShare 1/3', () => {
    expect(dataOf(googleVoidedImportEvents('app', voided(MAY_21, 1), stored()))).toMatchObject({
      revocationDate: '2026-05-21T09:00:00.000Z',
      revocationType: 'REFUND_PRORATED',
      refundedShare: 1 / 3,
    });
  });

  it('given an order refunded 1 of 3 already, when 1 more is voided, then 2/3 at the later void; it is not skipped as revoked', () => {
    const once = stored({ revocationDate: '2026-05-21T09:00:00.000Z', revocationType: 'REFUND_PRORATED', refundedShare: 1 / 3 });
    expect(dataOf(googleVoidedImportEvents('app', voided(MAY_22, 1), once))).toMatchObject({
      revocationDate: '2026-05-22T09:00:00.000Z',
      revocationType: 'REFUND_PRORATED',
      refundedShare: 2 / 3,
    });
  });

  it('given an order that shows a partial void already, when the same void is listed again (a re-poll, a reconciliation pass), then it is skipped, not counted twice', () => {
    const once = stored({ revocationDate: '2026-05-21T09:00:00.000Z', revocationType: 'REFUND_PRORATED', refundedShare: 1 / 3 });
    expect(googleVoidedImportEvents('app', voided(MAY_21, 1), once)).toEqual({
      skip: `order ${ORDER} shows this void already (revoked 2026-05-21T09:00:00.000Z)`,
    });
  });

  it('given an order refunded whole already, then any later void is skipped', () => {
    const whole = stored({ revocationDate: '2026-05-21T09:00:00.000Z', revocationType: 'REFUND_FULL' });
    expect(googleVoidedImportEvents('app', voided(MAY_22, 1), whole)).toEqual({ skip: `order ${ORDER} is revoked already (2026-05-21T09:00:00.000Z)` });
    // a revocation stored before revocationType existed is whole too
    expect(googleVoidedImportEvents('app', voided(MAY_22), stored({ revocationDate: '2026-05-21T09:00:00.000Z' }))).toEqual({
      skip: `order ${ORDER} is revoked already (2026-05-21T09:00:00.000Z)`,
    });
  });

  it('given a voidedQuantity that is no count, then the void is skipped with the reason', () => {
    expect(googleVoidedImportEvents('app', voided(MAY_21, 0), stored())).toEqual({ skip: `order ${ORDER}: voidedQuantity 0 is not a count of units` });
  });

  it('given two voids of the same order, then each has its own event id (the journal and the log see two)', () => {
    const [a] = (googleVoidedImportEvents('app', voided(MAY_21, 1), stored()) as { events: { id: string }[] }).events;
    const [b] = (googleVoidedImportEvents('app', voided(MAY_22, 1), stored()) as { events: { id: string }[] }).events;
    expect(a.id).not.toBe(b.id);
  });
});
