import type { PurchaseEvent, TransactionSnapshot } from '../events/purchase-event.js';
import {
  isNewer,
  linkWins,
  projectEvents,
  replacementFlags,
  SNAPSHOT_CONTRACT,
  snapshotDigest,
  transactionRow,
  type ReplacementCandidate,
} from './project-events.js';

// given / when / then over the pure mapping; the same rules against stored rows are covered by
// test/projection/*.int-spec.ts.

const tx = (id: string, time: string, data: Partial<TransactionSnapshot> = {}, appId = 'app'): PurchaseEvent => ({
  id,
  appId,
  time,
  type: 'transaction.updated',
  data: { transactionId: 'apple:t1', purchaseId: 'apple:p1', productId: 'apple:m', platform: 'apple', receiptId: 'apple:r1', ...data },
});
const link = (id: string, time: string, receiptId: string, user: string, appId = 'app'): PurchaseEvent => ({
  id,
  appId,
  time,
  type: 'receipt.linked',
  data: { receiptId, applicationUsername: user },
});

/** The rows a batch writes, without the batch's own log of snapshots (which follows arrival order). */
const rows = ({ transactionSteps: _steps, ...written }: ReturnType<typeof projectEvents>) => written;

const T1 = '2024-01-01T00:00:00.000000Z';
const T2 = '2024-02-01T00:00:00.000000Z';
const T3 = '2024-03-01T00:00:00.000000Z';

describe('transactionRow and SNAPSHOT_CONTRACT (the one mapping of a snapshot to its row)', () => {
  it('writes each contract field into the column the table names, and every other column from elsewhere', () => {
    // A distinct value per field, of the field's type, so a column written from the wrong field shows.
    const snapshot = Object.fromEntries(
      SNAPSHOT_CONTRACT.map(([, field], i) => [
        field,
        /^(is|sandbox)/.test(field)
          ? i % 2 === 0
          : /^(quantity|amount|refunded)/.test(field)
            ? i + 0.5
            : /Date$/.test(field)
              ? `2024-01-${String(i + 1).padStart(2, '0')}T00:00:00.000000Z`
              : `value-${field}`,
      ]),
    ) as unknown as TransactionSnapshot;
    const row = transactionRow('app', { ...snapshot, transactionId: 'apple:t1' }, { version_time: T1, version_id: 'e1' });
    for (const [column, field] of SNAPSHOT_CONTRACT) expect([column, row[column]]).toEqual([column, snapshot[field]]);
  });
});

describe('projectEvents', () => {
  it('given one snapshot, then one transaction row keyed by app and id', () => {
    const { transactions, receipts, customers } = projectEvents([tx('e1', T1, { purchaseDate: T1, expirationDate: T2, amountUSD: 2 })]);
    expect(transactions).toHaveLength(1);
    expect(transactions[0]).toMatchObject({
      app_id: 'app',
      transaction_id: 'apple:t1',
      purchase_date: T1,
      expiration_date: T2,
      amount_usd: 2,
      occurred_at: T1,
      version_time: T1,
      version_id: 'e1',
      sandbox: null,
    });
    expect(receipts).toEqual([]);
    expect(customers).toEqual([]);
  });

  it('when a newer snapshot follows, then its fields win, its date included', () => {
    const [row] = projectEvents([
      tx('e1', T1, { purchaseDate: T1, expirationDate: T2 }),
      tx('e2', T2, { purchaseDate: T1, lastRenewalDate: T2, expirationDate: T3 }),
    ]).transactions;
    expect(row).toMatchObject({ expiration_date: T3, occurred_at: T2, first_event_at: T1, version_id: 'e2' });
  });

  it('the transaction date is lastRenewalDate, else renewalDate, else purchaseDate, else the first event time', () => {
    const date = (data: Partial<TransactionSnapshot>, events = [tx('e1', T3, data)]) => projectEvents(events).transactions[0].occurred_at;
    expect(date({ lastRenewalDate: T3, renewalDate: T2, purchaseDate: T1 })).toBe(T3);
    expect(date({ renewalDate: T2, purchaseDate: T1 })).toBe(T2);
    expect(date({ purchaseDate: T1 })).toBe(T1);
    expect(date({})).toBe(T3);
    // the winning snapshot has no date: the earliest event's time, whatever that event said
    expect(date({}, [tx('e2', T3), tx('e1', T2, { purchaseDate: T1 })])).toBe(T2);
  });

  it('a corrected purchaseDate in a newer snapshot re-files the row, later or earlier', () => {
    const later = projectEvents([tx('e1', T1, { purchaseDate: T1 }), tx('e2', T3, { purchaseDate: T2 })]).transactions[0];
    expect(later.occurred_at).toBe(T2);
    const earlier = projectEvents([tx('e1', T2, { purchaseDate: T3 }), tx('e2', T3, { purchaseDate: T1 })]).transactions[0];
    expect(earlier.occurred_at).toBe(T1);
  });

  it('arriving out of order gives the same rows', () => {
    const events = [
      tx('e1', T1, { purchaseDate: T1, expirationDate: T2 }),
      tx('e2', T2, { expirationDate: T3 }),
      link('e3', T2, 'apple:r1', 'ann'),
      link('e4', T3, 'apple:r1', 'bob'),
    ];
    const forward = projectEvents(events);
    const backward = projectEvents([...events].reverse());
    const sort = (r: ReturnType<typeof projectEvents>) => ({
      transactions: r.transactions,
      receipts: r.receipts,
      customers: [...r.customers].sort((a, b) => a.application_username.localeCompare(b.application_username)),
    });
    expect(sort(backward)).toEqual(sort(forward));
    expect(forward.transactions[0]).toMatchObject({ expiration_date: T3, occurred_at: T1, first_event_at: T1 });
    expect(forward.receipts).toEqual([
      { app_id: 'app', receipt_id: 'apple:r1', application_username: 'bob', explicit: true, version_time: T3, version_id: 'e4' },
    ]);
  });

  it('runs twice, same result', () => {
    const events = [tx('e1', T1), link('e2', T2, 'apple:r1', 'ann')];
    expect(projectEvents(events)).toEqual(projectEvents(events));
  });

  it('equal times: the greater event id wins', () => {
    const [row] = projectEvents([tx('b', T1, { renewalIntent: 'Renew' }), tx('a', T1, { renewalIntent: 'Lapse' })]).transactions;
    expect(row).toMatchObject({ renewal_intent: 'Renew', version_id: 'b' });
    expect(isNewer({ version_time: T1, version_id: 'B' }, { version_time: T1, version_id: 'a' })).toBe(false); // byte order
  });

  it('a transaction naming a user links its receipt, as a link of lower rank than receipt.linked', () => {
    const { receipts, customers } = projectEvents([tx('e1', T2, { applicationUsername: 'ann' })]);
    expect(receipts).toEqual([{ app_id: 'app', receipt_id: 'apple:r1', application_username: 'ann', explicit: false, version_time: T2, version_id: 'e1' }]);
    expect(customers).toEqual([{ app_id: 'app', application_username: 'ann', first_seen_at: T2 }]);
  });

  it('restores stay: a later renewal carrying the original username does not move the receipt back', () => {
    const events = [
      tx('e1', T1, { applicationUsername: 'ann' }),
      link('e2', T2, 'apple:r1', 'bob'),
      tx('e3', T3, { transactionId: 'apple:t2', applicationUsername: 'ann' }),
    ];
    for (const order of [events, [...events].reverse()]) {
      expect(projectEvents(order).receipts.map((r) => r.application_username)).toEqual(['bob']);
    }
  });

  it('without receipt.linked, the earliest transaction naming a user owns the receipt', () => {
    const events = [tx('e2', T2, { applicationUsername: 'bob' }), tx('e1', T1, { transactionId: 'apple:t2', applicationUsername: 'ann' })];
    expect(projectEvents(events).receipts.map((r) => r.application_username)).toEqual(['ann']);
  });

  it('linkWins ranks receipt.linked over transactions, newest among links, earliest among transactions', () => {
    const l = (explicit: boolean, time: string, id = 'x') => ({ explicit, version_time: time, version_id: id, application_username: 'u' });
    expect(linkWins(l(true, T1), l(false, T3))).toBe(true);
    expect(linkWins(l(false, T1), l(true, T3))).toBe(false);
    expect(linkWins(l(true, T3), l(true, T2))).toBe(true);
    expect(linkWins(l(true, T2), l(true, T3))).toBe(false);
    expect(linkWins(l(false, T2), l(false, T3))).toBe(true);
    expect(linkWins(l(false, T3), l(false, T2))).toBe(false);
  });

  it('given an id reused for other data at the same time, then the greater content digest wins in either order, and both customers are seen', () => {
    const a = tx('same', T2, { expirationDate: T3, applicationUsername: 'ann' });
    const b = tx('same', T2, { expirationDate: T1, applicationUsername: 'bob' });
    const byName = (changes: ReturnType<typeof projectEvents>) => ({
      ...rows(changes),
      customers: [...changes.customers].sort((x, y) => (x.application_username < y.application_username ? -1 : 1)),
    });
    const [one, other] = [byName(projectEvents([a, b])), byName(projectEvents([b, a]))];
    expect(one).toEqual(other);
    const digests = [snapshotDigest(projectEvents([a]).transactions[0]), snapshotDigest(projectEvents([b]).transactions[0])];
    expect(one.transactions[0].expiration_date).toBe(digests[0] > digests[1] ? T3 : T1);
    // a transaction's username is a link of its own: among those the earliest (time, id, username) wins
    expect(one.receipts.map((r) => r.application_username)).toEqual(['ann']);
    expect(one.customers.map((c) => c.application_username).sort()).toEqual(['ann', 'bob']);
  });

  it('given the same id twice with the same data, then one row, as from one event', () => {
    const a = tx('same', T2, { expirationDate: T3, applicationUsername: 'ann' });
    expect(rows(projectEvents([a, { ...a }]))).toEqual(rows(projectEvents([a])));
  });

  it('provenance is the event that made the state: a newer event with other content takes it over, one saying the same leaves it', () => {
    const notification = { ...tx('n1', T1, { expirationDate: T2 }), source: 'apple-app-store-server-notifications', receivedAt: T1 };
    const sameLater = { ...tx('i1', T2, { expirationDate: T2 }), source: 'apple-app-store-server-api', receivedAt: T2 };
    const renewed = { ...tx('r1', T3, { expirationDate: T3 }), source: 'subscription-records-reconciliation', receivedAt: T3 };
    const kept = projectEvents([notification, sameLater]).transactions[0];
    expect(kept).toMatchObject({ version_id: 'i1', state_event_id: 'n1', state_source: 'apple-app-store-server-notifications', state_received_at: T1 });
    expect(projectEvents([notification, sameLater, renewed]).transactions[0]).toMatchObject({
      version_id: 'r1',
      state_event_id: 'r1',
      state_source: 'subscription-records-reconciliation',
      state_received_at: T3,
    });
    // a snapshot that loses changes nothing, provenance included; a redelivery of the winner neither
    expect(projectEvents([renewed, notification]).transactions[0]).toMatchObject({ state_event_id: 'r1' });
    expect(projectEvents([notification, { ...notification, receivedAt: T3 }]).transactions[0]).toMatchObject({ state_event_id: 'n1', state_received_at: T1 });
  });

  it('provenance follows log order: a state that went and came back is from its last coming, unless it came back before it went', () => {
    const a = { ...tx('a', T1, { renewalIntent: 'Renew' }), source: 's' };
    const b = { ...tx('b', T2, { renewalIntent: 'Lapse' }), source: 's' };
    const c = { ...tx('c', T3, { renewalIntent: 'Renew' }), source: 's' };
    expect(projectEvents([a, b, c]).transactions[0].state_event_id).toBe('c');
    // c arrived before b: when b came it lost, so the state c said was never changed after a said it
    expect(projectEvents([a, c, b]).transactions[0].state_event_id).toBe('a');
  });

  it('receipt.linked reusing an id for another username at the same time: the greater username wins in either order', () => {
    const events = [link('same', T2, 'apple:r1', 'bob'), link('same', T2, 'apple:r1', 'ann')];
    for (const order of [events, [...events].reverse()]) expect(projectEvents(order).receipts.map((r) => r.application_username)).toEqual(['bob']);
  });

  it('snapshotDigest reads content only: a row read back (bigint as text) digests as the event did', () => {
    const [row] = projectEvents([tx('e1', T1, { amountMicros: 4990000, amountUSD: 4.99, quantity: 2, sandbox: false, expirationDate: T2 })]).transactions;
    const readBack = { ...row, amount_micros: '4990000' as unknown as number, first_event_at: T3, occurred_at: T3, is_upgraded: true };
    expect(snapshotDigest(readBack)).toBe(snapshotDigest(row));
    expect(snapshotDigest({ ...row, expiration_date: T3 })).not.toBe(snapshotDigest(row));
  });

  it('a receipt moving between customers: the later link wins, both customers are seen', () => {
    const { receipts, customers } = projectEvents([link('e2', T2, 'apple:r1', 'bob'), link('e1', T1, 'apple:r1', 'ann')]);
    expect(receipts.map((r) => r.application_username)).toEqual(['bob']);
    expect(customers.map((c) => [c.application_username, c.first_seen_at]).sort()).toEqual([
      ['ann', T1],
      ['bob', T2],
    ]);
  });

  it('a customer is first seen at the earliest event naming them', () => {
    const { customers } = projectEvents([link('e3', T3, 'apple:r2', 'ann'), link('e1', T1, 'apple:r1', 'ann')]);
    expect(customers).toEqual([{ app_id: 'app', application_username: 'ann', first_seen_at: T1 }]);
  });

  it('without a purchaseDate a transaction is placed at the observation time', () => {
    expect(projectEvents([tx('e1', T2)]).transactions[0].occurred_at).toBe(T2);
  });

  it('keeps tenants apart: same ids in two apps are two rows', () => {
    const { transactions, customers } = projectEvents([tx('e1', T1, { applicationUsername: 'ann' }, 'a1'), tx('e1', T1, { applicationUsername: 'ann' }, 'a2')]);
    expect(transactions.map((t) => t.app_id).sort()).toEqual(['a1', 'a2']);
    expect(customers.map((c) => c.app_id).sort()).toEqual(['a1', 'a2']);
  });
});

describe('replacementFlags (rule 2: replaced by another transaction of the same subscription)', () => {
  const row = (id: string, over: Partial<ReplacementCandidate>): ReplacementCandidate => ({
    app_id: 'app',
    transaction_id: id,
    receipt_id: 'apple:1000',
    purchase_id: 'apple:1000',
    product_id: 'apple:yearly',
    occurred_at: T1,
    version_time: T1,
    expiration_date: '2025-01-01T00:00:00.000000Z',
    revocation_date: null,
    is_pending: null,
    is_expired: null,
    is_upgraded: null,
    cancelation_reason: null,
    snapshot_is_upgraded: null,
    snapshot_cancelation_reason: null,
    ...over,
  });
  const yearly = row('apple:1000', {});
  const monthly = row('apple:1001', { product_id: 'apple:pro_monthly', occurred_at: T2, version_time: T2, expiration_date: T3 });

  it('given a yearly and, in its year, a monthly of the same subscription, then the yearly is shown replaced', () => {
    expect(replacementFlags([yearly, monthly])).toEqual([
      { app_id: 'app', transaction_id: 'apple:1000', receipt_id: 'apple:1000', is_upgraded: true, cancelation_reason: 'System.Replaced' },
    ]);
    expect(replacementFlags([monthly, yearly])).toHaveLength(1);
  });

  it('when it is already shown so, then nothing changes (runs twice, same result)', () => {
    expect(replacementFlags([{ ...yearly, is_upgraded: true, cancelation_reason: 'System.Replaced' }, monthly])).toEqual([]);
  });

  it('when the replacement goes away (the monthly moved to another receipt), then the row shows its snapshot again', () => {
    const marked = { ...yearly, is_upgraded: true, cancelation_reason: 'System.Replaced', snapshot_cancelation_reason: 'Customer' };
    expect(replacementFlags([marked])).toEqual([
      { app_id: 'app', transaction_id: 'apple:1000', receipt_id: 'apple:1000', is_upgraded: null, cancelation_reason: 'Customer' },
    ]);
  });

  it('the same receipt id in another application is another subscription', () => {
    expect(replacementFlags([yearly, { ...monthly, app_id: 'other' }])).toEqual([]);
  });
});
