import { createProgress, formatEta, SlidingRate } from './progress.js';

describe('CLI progress', () => {
  it('formats an ETA a person reads, and none without a rate', () => {
    expect([formatEta(undefined), formatEta(Infinity), formatEta(42.4), formatEta(185), formatEta(3720)]).toEqual(['-', '-', '42 s', '3 min 5 s', '1 h 2 min']);
  });

  it('measures a rate over the last samples', () => {
    const rate = new SlidingRate();
    rate.update(0, 0);
    expect(rate.update(500, 1000)).toBe(500);
    expect(rate.update(1500, 2000)).toBe(750);
  });

  it('writes plain periodic lines with count, rate, share and ETA when stderr is not a terminal', async () => {
    const lines: string[] = [];
    const progress = createProgress({ label: 'publish', unit: 'events', tty: false, everyMs: 0, write: (l) => lines.push(l) });
    await new Promise((r) => setTimeout(r, 20));
    progress.update({ done: 250, fraction: 0.25, detail: '1 refused' });
    progress.update({ done: 300 });
    expect(lines[0]).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z publish: 250 events, 25%, \d+ events\/s, ETA \d+ s, 1 refused\n$/);
    expect(lines[1]).toMatch(/ publish: 300 events, \d+ events\/s, ETA -\n$/);
  });
});
