import type { ContractEvent } from '../../store-notifications/apple/apple-to-events.js';
import { planPurchase, type StoredOwner } from './purchase-plan.js';

const NOW = new Date('2026-11-28T12:00:00.000Z');
const tx = (receiptId: string, o: { id?: string; user?: string } = {}): ContractEvent => ({
  specversion: '1.0',
  id: o.id ?? `e-${receiptId}`,
  type: 'transaction.updated',
  time: '2026-11-28T11:00:00.000Z',
  appid: 'app-1',
  data: { receiptId, transactionId: `${receiptId}-t1`, purchaseId: receiptId, ...(o.user ? { applicationUsername: o.user } : {}) },
});
const storeLink = (receiptId: string, user: string): ContractEvent => ({
  specversion: '1.0',
  id: `e-${receiptId}:link`,
  type: 'receipt.linked',
  time: '2026-11-28T11:00:00.000Z',
  appid: 'app-1',
  data: { receiptId, applicationUsername: user },
});
const owned = (user: string | null, versionMs = Date.parse('2026-11-01T00:00:00.000Z'), versionId = 'v1'): StoredOwner => ({
  applicationUsername: user,
  versionMs,
  versionId,
});
const base = { appId: 'app-1', username: 'alice', rule: 'transfer' as const, proof: true, applied: new Set<string>(), now: NOW };

describe('planPurchase', () => {
  it("a receipt no one owns: the store's event and a link at now, the store's own link dropped", () => {
    const plan = planPurchase({ ...base, events: [tx('apple:1', { user: 'alice' }), storeLink('apple:1', 'alice')], owners: new Map() });
    expect(plan).toEqual({
      kind: 'publish',
      events: [tx('apple:1', { user: 'alice' }), expect.objectContaining({ type: 'receipt.linked', time: '2026-11-28T12:00:00.000Z' })],
      links: [
        expect.objectContaining({
          type: 'receipt.linked',
          time: '2026-11-28T12:00:00.000Z',
          source: 'subscription-records-purchases',
          data: { receiptId: 'apple:1', applicationUsername: 'alice' },
        }),
      ],
      transferred: [],
    });
  });

  it('already owned and already projected: nothing to publish', () => {
    const plan = planPurchase({ ...base, events: [tx('apple:1')], owners: new Map([['apple:1', owned('alice')]]), applied: new Set(['e-apple:1']) });
    expect(plan).toEqual({ kind: 'publish', events: [], links: [], transferred: [] });
  });

  it("transfer: another user's receipt moves, with a link just after the stored one when that is later than now", () => {
    const later = Date.parse('2026-11-28T12:00:05.000Z');
    const plan = planPurchase({ ...base, events: [tx('apple:1')], owners: new Map([['apple:1', owned('bob', later, 'v9')]]) });
    expect(plan).toMatchObject({ kind: 'publish', transferred: ['apple:1'], links: [{ time: '2026-11-28T12:00:05.001Z' }] });
  });

  it('the link id names the link it supersedes: the same state gives the same id, a later state another', () => {
    const events = [tx('apple:1')];
    const a = planPurchase({ ...base, events, owners: new Map([['apple:1', owned('bob', 0, 'v1')]]) });
    const b = planPurchase({ ...base, events, owners: new Map([['apple:1', owned('bob', 0, 'v1')]]), now: new Date(NOW.getTime() + 60_000) });
    const c = planPurchase({ ...base, events, owners: new Map([['apple:1', owned('carol', 0, 'v2')]]) });
    const id = (p: ReturnType<typeof planPurchase>) => (p.kind === 'publish' ? p.links[0].id : undefined);
    expect(id(a)).toBe(id(b));
    expect(id(a)).not.toBe(id(c));
    expect(id(a)).toMatch(/^purchase-link:[A-Za-z0-9_-]{32}$/);
  });

  it('keep: another stored owner, or a store token naming another user, is a conflict naming the rule', () => {
    expect(planPurchase({ ...base, rule: 'keep', events: [tx('apple:1')], owners: new Map([['apple:1', owned('bob')]]) })).toEqual({
      kind: 'conflict',
      receiptId: 'apple:1',
      owner: 'bob',
      reason: 'keep',
    });
    expect(planPurchase({ ...base, rule: 'keep', events: [tx('apple:1', { user: 'bob' })], owners: new Map() })).toMatchObject({
      kind: 'conflict',
      reason: 'keep',
    });
  });

  it('without a proof of purchase (a transaction id) nothing moves, even under transfer; a receipt no one owns still links', () => {
    expect(planPurchase({ ...base, proof: false, events: [tx('apple:1')], owners: new Map([['apple:1', owned('bob')]]) })).toMatchObject({
      kind: 'conflict',
      reason: 'unproven',
    });
    expect(planPurchase({ ...base, proof: false, events: [tx('apple:1')], owners: new Map() })).toMatchObject({
      kind: 'publish',
      links: [{ data: { applicationUsername: 'alice' } }],
    });
  });

  it('an erased owner (null) is no other user: the receipt links without a conflict, even under keep', () => {
    expect(planPurchase({ ...base, rule: 'keep', events: [tx('apple:1')], owners: new Map([['apple:1', owned(null)]]) })).toMatchObject({
      kind: 'publish',
      transferred: [],
      links: [{ data: { receiptId: 'apple:1' } }],
    });
  });
});
