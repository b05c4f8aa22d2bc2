import { CatchUpLog } from './catch-up-log.js';

describe('catch-up log lines', () => {
  const setup = () => {
    let now = 0;
    const lines: Record<string, unknown>[] = [];
    const log = new CatchUpLog(
      (l) => lines.push(l),
      10_000,
      () => now,
    );
    return { log, lines, at: (ms: number) => (now = ms) };
  };

  it('given a backlog of 100k on two partitions, when batches apply over 30 s, then a line every 10 s and one when caught up', () => {
    const { log, lines, at } = setup();
    const next = [0n, 0n];
    const ends = [60_000n, 40_000n];
    for (let s = 0; s <= 30; s++) {
      at(s * 1000);
      for (const p of [0, 1]) {
        const before = next[p];
        next[p] = before + 2_000n > ends[p] ? ends[p] : before + 2_000n;
        log.batchApplied(p, Number(next[p] - before), next[p], ends[p]);
      }
    }
    expect(lines.map((l) => l.msg)).toEqual(['catching up', 'catching up', 'caught up']);
    expect(lines[0]).toEqual({ msg: 'catching up', eventsApplied: 42_000, eventsPerSecond: 4_200, eventsLeft: { 0: 38_000, 1: 20_000 } });
    expect(lines[2]).toMatchObject({ msg: 'caught up', eventsApplied: 100_000, seconds: 29 });
  });

  it('given live traffic that is briefly behind, then nothing is said', () => {
    const { log, lines, at } = setup();
    for (let s = 0; s < 60; s++) {
      at(s * 1000);
      log.batchApplied(0, 10, BigInt(s * 10), BigInt(s * 10 + 5));
      at(s * 1000 + 500);
      log.batchApplied(0, 5, BigInt(s * 10 + 5), BigInt(s * 10 + 5));
    }
    expect(lines).toEqual([]);
  });

  it('a partition handed to another instance no longer counts as behind', () => {
    const { log, lines, at } = setup();
    at(0);
    log.batchApplied(0, 1, 1n, 1000n);
    log.batchApplied(1, 1, 1n, 1000n);
    at(11_000);
    log.batchApplied(1, 999, 1000n, 1000n);
    log.forget(0);
    at(12_000);
    log.batchApplied(1, 0, 1000n, 1000n);
    expect(lines.map((l) => l.msg)).toEqual(['catching up', 'caught up']);
  });
});
