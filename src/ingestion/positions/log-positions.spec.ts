import { describePosition, positionProblem, resetTarget } from './log-positions.js';

describe('positionProblem', () => {
  it('is fine inside [log start, log end], the end included', () => {
    expect(positionProblem({ partition: 0, logStart: 0n, logEnd: 10n, stored: 10n })).toBeUndefined();
    expect(positionProblem({ partition: 0, logStart: 4n, logEnd: 10n, stored: 4n })).toBeUndefined();
    expect(positionProblem({ partition: 0, logStart: 0n, logEnd: 0n })).toBeUndefined();
  });

  it('names a stored offset beyond the end (recreated topic), before the start (retention), and lost history', () => {
    expect(positionProblem({ partition: 0, logStart: 0n, logEnd: 1n, stored: 5n })).toBe('beyond-end');
    expect(positionProblem({ partition: 1, logStart: 9n, logEnd: 20n, stored: 3n })).toBe('before-start');
    expect(positionProblem({ partition: 2, logStart: 7n, logEnd: 20n })).toBe('history-gone');
    expect(describePosition({ partition: 0, logStart: 0n, logEnd: 1n, stored: 5n })).toBe(
      'partition 0: stored offset 5, log 0..1: the log ends before the stored offset (topic recreated or truncated)',
    );
  });
});

describe('resetTarget', () => {
  const p = { partition: 3, logStart: 2n, logEnd: 9n, stored: 20n };
  it('resolves earliest, latest and explicit offsets within the log', () => {
    expect(resetTarget(p, 'earliest')).toBe(2n);
    expect(resetTarget(p, 'latest')).toBe(9n);
    expect(resetTarget(p, '5')).toBe(5n);
  });
  it('refuses offsets outside the log and anything else', () => {
    expect(() => resetTarget(p, '10')).toThrow("--to 10 is outside partition 3's log 2..9");
    expect(() => resetTarget(p, 'start')).toThrow('--to must be earliest, latest or an offset (got "start")');
  });
});
