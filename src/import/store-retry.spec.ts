import { parseRetryAfter } from './store-retry.js';

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-11-28T12:00:00.000Z');

  it('reads delta-seconds and an HTTP date, as HTTP allows (Google, Stripe)', () => {
    expect(parseRetryAfter('7', now)).toBe(7000);
    expect(parseRetryAfter('Sat, 28 Nov 2026 12:00:30 GMT', now)).toBe(30_000);
  });

  it("reads the App Store Server API's UNIX time in milliseconds", () => {
    expect(parseRetryAfter(String(now + 2500), now)).toBe(2500);
    expect(parseRetryAfter(String(now - 10), now)).toBe(0);
  });

  it('gives undefined for absent or unreadable values', () => {
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter('', now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
  });
});
