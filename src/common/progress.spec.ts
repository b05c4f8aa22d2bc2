import { PassThrough } from 'node:stream';
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

  it('gives no rate before its samples span a second, instead of 0 or millions', () => {
    const rate = new SlidingRate();
    expect([rate.update(0, 0), rate.update(10, 5), rate.update(400, 999)]).toEqual([undefined, undefined, undefined]);
    expect(rate.update(1000, 1000)).toBe(1000);
  });

  it('keeps measuring over the last ten seconds when updated per item', () => {
    const rate = new SlidingRate();
    for (let ms = 0; ms <= 30_000; ms += 1) rate.update(ms < 20_000 ? ms * 2 : 40_000 + (ms - 20_000), ms);
    // 2 items per ms for 20 s, then 1 per ms: the last ten seconds (samples folded per 100 ms) say about 1000/s
    const last = rate.update(50_000, 30_000)!;
    expect(Math.abs(last - 1000)).toBeLessThan(20);
  });

  it('shows its own rate and ETA on a terminal: never NULL or INF', async () => {
    const stream = Object.assign(new PassThrough(), { isTTY: true, columns: 200 });
    let out = '';
    stream.on('data', (c) => (out += c));
    const progress = createProgress({ label: 'publish', unit: 'events', tty: true, stream });
    progress.update({ done: 0, fraction: 0 });
    await new Promise((r) => setTimeout(r, 1100));
    progress.update({ done: 500, fraction: 0.5 });
    progress.stop();
    expect(out).not.toMatch(/NULL|INF/);
    expect(out).toMatch(/500 events \| \d+ events\/s \| ETA [01] s/);
  });

  it('writes plain periodic lines with count, rate, share and ETA when stderr is not a terminal', async () => {
    const lines: string[] = [];
    const progress = createProgress({ label: 'publish', unit: 'events', tty: false, everyMs: 0, write: (l) => lines.push(l) });
    await new Promise((r) => setTimeout(r, 20));
    progress.update({ done: 250, fraction: 0.25, detail: '1 refused' });
    progress.update({ done: 300 });
    expect(lines[0]).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z publish: 250 events, 25%, - events\/s, ETA \d+ s, 1 refused\n$/);
    expect(lines[1]).toMatch(/ publish: 300 events, - events\/s, ETA -\n$/);
  });

  // docs/import.md promises a line every 5 s on a pipe; lines were written only on an update, so
  // an import waiting 48 s for the store's first page said nothing at all.
  it('writes a plain line every everyMs while nothing updates it, with the last count, until stopped', async () => {
    const lines: string[] = [];
    const until = async (done: () => boolean) => {
      for (const started = Date.now(); !done(); await new Promise((r) => setTimeout(r, 10)))
        if (Date.now() - started > 5_000) throw new Error(`no such line in ${JSON.stringify(lines)}`);
    };
    const progress = createProgress({ label: 'import', unit: 'lines', tty: false, everyMs: 100, write: (l) => lines.push(l) });
    await until(() => lines.length >= 2);
    expect(lines[0]).toMatch(/ import: 0 lines, - lines\/s, ETA -\n$/);
    progress.update({ done: 7, detail: '0 failed' });
    progress.clear(); // a message line between: plain lines go on
    await until(() => lines.some((l) => / import: 7 lines, - lines\/s, ETA -, 0 failed\n$/.test(l)));
    progress.stop();
    const stopped = lines.length;
    await new Promise((r) => setTimeout(r, 300));
    expect(lines).toHaveLength(stopped);
  });
});
