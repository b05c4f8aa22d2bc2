import { chainCheckInstant } from './apple-verifier.js';

const NOW = Date.parse('2026-06-15T12:00:00Z');
const DAY = 86_400_000;

describe('chainCheckInstant', () => {
  it('is the signing date within the week before now (and a minute of skew ahead)', () => {
    for (const at of [NOW, NOW - DAY, NOW - 7 * DAY, NOW + 60_000]) expect(chainCheckInstant(at, NOW)).toBe(at);
  });

  it('is now for any date the payload could pick to make an expired chain valid, or that is no date', () => {
    for (const at of [NOW - 7 * DAY - 1, NOW - 365 * DAY, NOW + 60_001, NOW + 30 * DAY, 1e20, -1e20, NaN, Infinity])
      expect(chainCheckInstant(at, NOW)).toBe(NOW);
  });
});
