import { retryDelayMs } from './retry-schedule.js';

describe('retryDelayMs', () => {
  it('doubles per attempt, within [step/2, step]', () => {
    expect([1, 2, 3, 4].map((a) => retryDelayMs(a, 1000, () => 0))).toEqual([500, 1000, 2000, 4000]);
    expect([1, 2, 3, 4].map((a) => retryDelayMs(a, 1000, () => 1))).toEqual([1000, 2000, 4000, 8000]);
  });

  it('never waits more than an hour', () => {
    expect(retryDelayMs(40, 5000, () => 1)).toBe(3_600_000);
    expect(retryDelayMs(1000, 5000, () => 0)).toBe(1_800_000);
  });
});
