import { decodeEvent } from '../events/decode-event.js';
import { generateEvents } from './generate-events.js';

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
});
