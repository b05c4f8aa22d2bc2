import { jest } from '@jest/globals';
import type { Logger } from '@nestjs/common';
import { PeriodicTask } from './periodic-task.js';

describe('PeriodicTask', () => {
  const warnings: unknown[] = [];
  const logger = { warn: (message: unknown) => warnings.push(message) } as unknown as Logger;
  beforeEach(() => {
    warnings.length = 0;
    jest.useFakeTimers();
  });
  afterEach(() => jest.useRealTimers());

  it('runs at once and every interval, skipping ticks while a run is in flight', async () => {
    let started = 0;
    let finish: () => void = () => undefined;
    const task = new PeriodicTask(logger, 'failed', () => {
      started += 1;
      return new Promise<void>((resolve) => (finish = resolve));
    });
    task.start(1000);
    expect(started).toBe(1);
    await jest.advanceTimersByTimeAsync(3000);
    expect(started).toBe(1);
    finish();
    await jest.advanceTimersByTimeAsync(1000);
    expect(started).toBe(2);
    finish();
    await task.stop();
  });

  it('logs a failure and retries at the next tick', async () => {
    let calls = 0;
    const task = new PeriodicTask(logger, 'the sweep failed; the next one retries', async () => {
      calls += 1;
      if (calls === 1) throw new Error('lock timeout');
    });
    task.start(1000);
    await jest.advanceTimersByTimeAsync(0);
    expect(warnings).toEqual([{ msg: 'the sweep failed; the next one retries', error: 'lock timeout' }]);
    await jest.advanceTimersByTimeAsync(1000);
    expect(calls).toBe(2);
    expect(warnings).toHaveLength(1);
    await task.stop();
  });

  it('stop waits for the run in flight and ends the ticks', async () => {
    let calls = 0;
    let finished = false;
    const task = new PeriodicTask(logger, 'failed', async () => {
      calls += 1;
      await new Promise((resolve) => setTimeout(resolve, 500));
      finished = true;
    });
    task.start(1000);
    const stopped = task.stop();
    await jest.advanceTimersByTimeAsync(500);
    await stopped;
    expect(finished).toBe(true);
    await jest.advanceTimersByTimeAsync(5000);
    expect(calls).toBe(1);
  });
});
