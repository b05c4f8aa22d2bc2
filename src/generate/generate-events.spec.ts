import { decodeEvent } from '../events/decode-event.js';
import { generateEvents, sortedByTime } from './generate-events.js';

const take = (seed: number, events: number) => [...generateEvents({ seed, events })];

describe('generateEvents', () => {
  it('is deterministic for a seed and differs between seeds', () => {
    expect(take(7, 500)).toEqual(take(7, 500));
    expect(take(8, 500)).not.toEqual(take(7, 500));
  });

  it('produces exactly the requested number of events, each valid under the event contract', () => {
    const events = take(3, 3000);
    expect(events).toHaveLength(3000);
    for (const e of events) expect(decodeEvent(JSON.stringify(e))).toMatchObject({ ok: true });
  });

  it('covers the realistic cases: apps of very different sizes, renewals, trials, refunds, upgrades, grace, pending, consumables, both platforms, sandbox', () => {
    const events = take(5, 20_000);
    const data = events.map((e) => e.data as Record<string, unknown>);
    const perApp = new Map<string, number>();
    for (const e of events) perApp.set(e.appid as string, (perApp.get(e.appid as string) ?? 0) + 1);
    const sizes = [...perApp.values()].sort((a, b) => b - a);
    expect(sizes.length).toBeGreaterThanOrEqual(4);
    expect(sizes[0] / sizes[sizes.length - 1]).toBeGreaterThan(20);
    expect(data.some((d) => d.lastRenewalDate)).toBe(true);
    expect(data.some((d) => d.isTrialPeriod)).toBe(true);
    expect(data.some((d) => d.isExpired && d.cancelationReason)).toBe(true);
    expect(data.some((d) => d.isConsumed)).toBe(true);
    expect(data.some((d) => d.renewalIntent === 'Lapse')).toBe(true);
    expect(new Set(data.filter((d) => d.transactionId).map((d) => d.platform))).toEqual(new Set(['apple', 'google']));
    expect(data.some((d) => d.sandbox)).toBe(true);
    expect(events.some((e) => e.type === 'receipt.linked')).toBe(true);
    expect(data.some((d) => d.revocationDate)).toBe(true);
    expect(data.some((d) => d.isUpgraded)).toBe(true);
    expect(data.some((d) => d.isBillingRetryPeriod && d.gracePeriodExpirationDate)).toBe(true);
    expect(data.some((d) => d.isBillingRetryPeriod && !d.gracePeriodExpirationDate)).toBe(true);
    expect(data.some((d) => d.isPending)).toBe(true);
    const years = new Set(events.map((e) => String(e.time).slice(0, 4)));
    expect(years.size).toBeGreaterThanOrEqual(3);
  });

  it('time order: the same events interleaved by event time, each with a distinct random UUIDv4 id', () => {
    const byCustomer = take(11, 5000);
    const byTime = [...generateEvents({ seed: 11, events: 5000, order: 'time' })];
    expect(byTime).toEqual([...generateEvents({ seed: 11, events: 5000, order: 'time' })]);
    const withoutId = ({ id: _id, ...rest }: Record<string, unknown>) => JSON.stringify(rest);
    expect(byTime.map(withoutId).sort()).toEqual(byCustomer.map(withoutId).sort());
    const times = byTime.map((e) => e.time as string);
    expect(times).toEqual([...times].sort());
    const ids = byTime.map((e) => e.id as string);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(ids).size).toBe(ids.length);
    // interleaved: consecutive events rarely belong to the same receipt, unlike the customer order
    const sameReceipt = (es: Record<string, unknown>[]) =>
      es.filter((e, i) => i > 0 && (e.data as { receiptId: string }).receiptId === (es[i - 1].data as { receiptId: string }).receiptId).length;
    expect(sameReceipt(byTime)).toBeLessThan(sameReceipt(byCustomer) / 10);
  });

  it('time order of a stream longer than it sorts at once: the same events and ids as one sort of the whole', () => {
    const whole = [...generateEvents({ seed: 12, events: 6000, order: 'time' })];
    // windows of ~700 and of ~150 events (40 passes over the stream)
    expect([...generateEvents({ seed: 12, events: 6000, order: 'time', sortEvents: 700 })]).toEqual(whole);
    expect([...generateEvents({ seed: 12, events: 6000, order: 'time', sortEvents: 150 })]).toEqual(whole);
  });

  it('sorts in windows as one stable sort does, also where many events share a time across a window edge', () => {
    // 3 distinct times over 40 events: every window edge falls among equal times
    const times = ['2025-01-01T00:00:02.000Z', '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:01.000Z'];
    const events = Array.from({ length: 40 }, (_, seq) => ({ seq, time: times[(seq * 7) % 3] }));
    // written out, not computed: times in order, equal times in their source order
    const expected = [
      ...events.filter((e) => e.time === times[1]),
      ...events.filter((e) => e.time === times[2]),
      ...events.filter((e) => e.time === times[0]),
    ].map((e) => e.seq);
    for (const limit of [1, 2, 5, 13, 39, 40, 1000]) {
      expect([...sortedByTime(() => events, events.length, limit)].map((e) => e.seq)).toEqual(expected);
    }
    expect(() => [...sortedByTime(() => events, events.length, 0)]).toThrow('sortEvents must be a positive integer, not 0');
    expect(() => [...sortedByTime(() => events, events.length, 0.5)]).toThrow(RangeError);
  });
});
