const HOUR_MS = 3_600_000;

/**
 * Delay before the next attempt after `attempts` failed ones: doubling from `baseMs` up to an hour,
 * with jitter (half the step plus a random part) so endpoints that failed together do not retry
 * together.
 */
export function retryDelayMs(attempts: number, baseMs: number, random: () => number = Math.random): number {
  const step = Math.min(HOUR_MS, baseMs * 2 ** Math.min(Math.max(attempts - 1, 0), 30));
  return Math.round(step / 2 + (random() * step) / 2);
}
