import type { ImportEvent } from '../import/import-runner.js';
import { describeDrift, driftOf, type StoredRow } from './drift.js';

const T0 = '2026-10-01T00:00:00.000000Z';
const T1 = '2026-11-01T00:00:00.000000Z';
const T2 = '2026-12-01T00:00:00.000000Z';
const SKEW = 60 * 60_000;

/** An event as the store's mapping builds it. */
const storeEvent = (data: Record<string, unknown>, time = '2026-11-28T10:00:00.000Z'): ImportEvent =>
  ({
    specversion: '1.0',
    id: `apple-import:${String(data.transactionId)}:1`,
    source: 'apple-app-store-server-api',
    type: 'transaction.updated',
    time,
    appid: 'app',
    data: { purchaseId: 'apple:1', productId: 'apple:monthly', platform: 'apple', receiptId: 'apple:1', sandbox: true, ...data },
  }) as unknown as ImportEvent;

/** A stored row as the reconciler reads it back. */
const stored = (o: Partial<StoredRow> & { transaction_id: string }): StoredRow => ({
  receipt_id: 'apple:1',
  purchase_id: 'apple:1',
  product_id: 'apple:monthly',
  platform: 'apple',
  sandbox: true,
  purchase_date: T0,
  last_renewal_date: null,
  renewal_date: null,
  expiration_date: T1,
  renewal_intent: 'Renew',
  renewal_intent_change_date: null,
  snapshot_cancelation_reason: null,
  is_pending: null,
  is_acknowledged: null,
  is_consumed: null,
  is_billing_retry_period: null,
  is_trial_period: null,
  is_intro_period: null,
  is_expired: null,
  grace_period_expiration_date: null,
  revocation_date: null,
  snapshot_is_upgraded: null,
  price_consent_status: null,
  discount_id: null,
  offer_type: null,
  offer_discount_type: null,
  offer_period: null,
  ownership_type: null,
  quantity: null,
  amount_usd: null,
  amount_micros: null,
  currency: null,
  revocation_type: null,
  refunded_share: null,
  version_time: '2026-10-01T00:00:00.000000Z',
  ...o,
});

describe('driftOf (what the store says against the stored rows)', () => {
  const first = { transactionId: 'apple:1', purchaseDate: T0, expirationDate: T1 };
  const rows = (...r: StoredRow[]) => new Map(r.map((x) => [x.transaction_id, x]));

  it('finds nothing when the store says what is stored, whatever the version', () => {
    const drift = driftOf('app', [storeEvent({ ...first, renewalIntent: 'Renew' })], rows(stored({ transaction_id: 'apple:1' })), SKEW);
    expect(drift).toEqual({ transactions: [], events: [] });
  });

  it('a transaction the read models lack is a missed renewal, published with a content id, source reconciliation, after the stored version', () => {
    const renewal = { transactionId: 'apple:2', purchaseDate: T0, lastRenewalDate: T1, expirationDate: T2, renewalIntent: 'Renew' };
    const drift = driftOf('app', [storeEvent(first), storeEvent(renewal)], rows(stored({ transaction_id: 'apple:1' })), SKEW);
    expect(drift.transactions.map((t) => [t.transactionId, t.kind, t.created])).toEqual([['apple:2', 'missed_renewal', true]]);
    expect(drift.events).toEqual([
      expect.objectContaining({ source: 'subscription-records-reconciliation', id: expect.stringMatching(/^reconcile:apple:2:[0-9a-f]{32}$/) }),
    ]);
    // The same answer again: the same id.
    expect(
      driftOf('app', [storeEvent(first), storeEvent(renewal, '2026-11-28T11:00:00.000Z')], rows(stored({ transaction_id: 'apple:1' })), SKEW).events[0].id,
    ).toBe(drift.events[0].id);
  });

  it('a stored snapshot as new as the answer, or newer (a notification that came meanwhile), stands: nothing is published', () => {
    const answer = storeEvent({ ...first, renewalIntent: 'Renew' }, '2026-11-28T10:00:00.000Z');
    for (const version_time of ['2026-11-28T10:00:00.000000Z', '2026-11-28T10:00:00.001000Z'])
      expect(driftOf('app', [answer], rows(stored({ transaction_id: 'apple:1', renewal_intent: 'Lapse', version_time })), SKEW)).toEqual({
        transactions: [],
        events: [],
      });
    expect(
      driftOf('app', [answer], rows(stored({ transaction_id: 'apple:1', renewal_intent: 'Lapse', version_time: '2026-11-28T09:59:59.999000Z' })), SKEW).events,
    ).toHaveLength(1);
  });

  it('names the kind: refund, expiry, intent, other', () => {
    const kind = (data: Record<string, unknown>, row: Partial<StoredRow> = {}) =>
      driftOf('app', [storeEvent({ ...first, renewalIntent: 'Renew', ...data })], rows(stored({ transaction_id: 'apple:1', ...row })), SKEW).transactions.map(
        (t) => t.kind,
      );
    expect(kind({ revocationDate: '2026-10-15T00:00:00.000Z', isExpired: true })).toEqual(['missed_refund']);
    expect(kind({ isExpired: true, renewalIntent: 'Lapse' })).toEqual(['missed_expiry']);
    expect(kind({ renewalIntent: 'Lapse' })).toEqual(['wrong_intent']);
    expect(kind({ currency: 'USD' })).toEqual(['other']);
  });

  it("keeps what the store leaves out of an older transaction, and a stored revocation Google's state does not show", () => {
    const renewal = { transactionId: 'apple:2', purchaseDate: T0, lastRenewalDate: T1, expirationDate: T2, renewalIntent: 'Renew' };
    // apple:1 is not the latest: its stored intent stays although the history says none
    const older = driftOf(
      'app',
      [storeEvent(first), storeEvent(renewal)],
      rows(stored({ transaction_id: 'apple:1' }), stored({ transaction_id: 'apple:2', last_renewal_date: T1, expiration_date: T2 })),
      SKEW,
    );
    expect(older.transactions).toEqual([]);
    const revoked = stored({
      transaction_id: 'apple:1',
      revocation_date: '2026-10-15T00:00:00.000000Z',
      is_expired: true,
      snapshot_cancelation_reason: 'Customer',
    });
    const google = {
      ...first,
      transactionId: 'google:GPA.1',
      platform: 'google',
      receiptId: 'google:tok',
      purchaseId: 'google:GPA.1',
      productId: 'google:monthly',
      renewalIntent: 'Renew',
    };
    const revokedOrder = {
      ...revoked,
      transaction_id: 'google:GPA.1',
      platform: 'google',
      receipt_id: 'google:tok',
      purchase_id: 'google:GPA.1',
      product_id: 'google:monthly',
      revocation_type: 'REFUND_PRORATED',
      refunded_share: 0.5,
    };
    expect(driftOf('app', [storeEvent(google)], rows(revokedOrder), SKEW).transactions).toEqual([]);
    // (the same answer against the order stored unrevoked is a drift: the comparison above is not vacuous)
    expect(driftOf('app', [storeEvent(google)], rows(stored({ ...revokedOrder, revocation_date: null })), SKEW).transactions).toHaveLength(1);
    // Apple's signed transaction says whether it is revoked: a reversal (REFUND_REVERSED) the service missed is healed
    const reversed = driftOf('app', [storeEvent({ ...first, renewalIntent: 'Renew' })], rows(revoked), SKEW);
    expect(reversed.transactions.map((t) => t.fields.map((f) => [f.field, f.store]))).toEqual([
      [
        ['is_expired', null],
        ['revocation_date', null],
      ],
    ]);
  });

  it("takes Google's listed voids into the order's answer: a missed expiry and a missed refund heal in one event; a void the row shows already is not taken again", () => {
    const order = {
      transactionId: 'google:GPA.2',
      platform: 'google',
      receiptId: 'google:tok2',
      purchaseId: 'google:GPA.2',
      productId: 'google:monthly',
      purchaseDate: T0,
      expirationDate: T1,
    };
    const storedOrder = stored({
      transaction_id: 'google:GPA.2',
      platform: 'google',
      receipt_id: 'google:tok2',
      purchase_id: 'google:GPA.2',
      product_id: 'google:monthly',
    });
    const voidedAt = Date.parse('2026-11-20T08:00:00Z');
    const voids = new Map([['GPA.2', [{ orderId: 'GPA.2', purchaseToken: 'tok2', voidedTimeMillis: String(voidedAt), voidedSource: 0, voidedReason: 1 }]]]);
    const healed = driftOf('app', [storeEvent({ ...order, isExpired: true, renewalIntent: 'Lapse' })], rows(storedOrder), SKEW, voids);
    expect(healed.transactions.map((t) => [t.kind, t.fields.map((f) => [f.field, f.store])])).toEqual([
      [
        'missed_refund',
        [
          ['renewal_intent', 'Lapse'],
          ['snapshot_cancelation_reason', 'Customer'],
          ['is_expired', true],
          ['revocation_date', '2026-11-20T08:00:00.000000Z'],
          ['revocation_type', 'REFUND_FULL'],
        ],
      ],
    ]);
    expect(healed.events).toHaveLength(1);
    const shown = stored({
      ...storedOrder,
      renewal_intent: 'Lapse',
      snapshot_cancelation_reason: 'Customer',
      is_expired: true,
      revocation_date: '2026-11-20T08:00:00.000000Z',
      revocation_type: 'REFUND_FULL',
    });
    expect(driftOf('app', [storeEvent({ ...order, isExpired: true, renewalIntent: 'Lapse' })], rows(shown), SKEW, voids).transactions).toEqual([]);
  });

  it("takes the subscription's state from its current transaction, not an upgraded one expiring later", () => {
    const upgradedFrom = { ...first, isUpgraded: true, revocationDate: T1, expirationDate: T2 };
    const upgradedTo = { transactionId: 'apple:2', purchaseDate: T1, expirationDate: T1, renewalIntent: 'Renew', isBillingRetryPeriod: true };
    const drift = driftOf(
      'app',
      [storeEvent(upgradedFrom), storeEvent({ ...upgradedTo, isBillingRetryPeriod: undefined })],
      rows(
        stored({ transaction_id: 'apple:1', snapshot_is_upgraded: true, revocation_date: T1, expiration_date: T2 }),
        stored({ transaction_id: 'apple:2', purchase_date: T1, expiration_date: T1, renewal_intent: 'Renew', is_billing_retry_period: true }),
      ),
      SKEW,
    );
    // the current one's billing retry is over (the store's answer leaves it out); the upgraded one is left as stored
    expect(drift.transactions.map((t) => [t.transactionId, t.fields.map((f) => f.field)])).toEqual([['apple:2', ['is_billing_retry_period']]]);
  });

  it('describes a subscription by kind and fields, without the username', () => {
    const drift = driftOf(
      'app',
      [storeEvent({ ...first, renewalIntent: 'Lapse', applicationUsername: 'ann' })],
      rows(stored({ transaction_id: 'apple:1' })),
      SKEW,
    );
    const text = describeDrift('apple:1', drift.transactions);
    expect(text).toBe('apple:1 wrong_intent: apple:1 wrong_intent: renewal_intent "Renew" -> "Lapse"');
    expect(drift.events[0].data).toMatchObject({ applicationUsername: 'ann', renewalIntent: 'Lapse' });
  });
});
