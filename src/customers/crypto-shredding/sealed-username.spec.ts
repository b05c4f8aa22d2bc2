import { randomBytes } from 'node:crypto';
import { openUsername, parseSealed, sealUsername } from './sealed-username.js';

const HASH = 'ab'.repeat(32);
const NAME = 'zoë.shred@example.com';

describe('sealed usernames (AES-256-GCM, node:crypto)', () => {
  const key = randomBytes(32);

  it('given a sealed name, when opened with its key, then it is the name; the sealed text does not hold it', () => {
    const sealed = sealUsername(key, 'app', HASH, NAME);
    expect(sealed).toMatch(new RegExp(`^sealed:v1:${HASH}:[A-Za-z0-9_-]+$`));
    // neither the name nor its base64url form (what a payload left unencrypted after the 12-byte IV
    // would show); 'zo' alone turned up by chance in ~1.5% of random ciphertexts
    for (const part of [NAME, 'zoë.shred', 'example.com', Buffer.from(NAME).toString('base64url').slice(0, 12)]) expect(sealed).not.toContain(part);
    expect(openUsername(key, 'app', parseSealed(sealed)!)).toBe(NAME);
  });

  it('given the same name sealed twice, then the texts differ (a fresh IV each time)', () => {
    expect(sealUsername(key, 'app', HASH, NAME)).not.toBe(sealUsername(key, 'app', HASH, NAME));
  });

  it('given another key (the customer was erased and signed up again), when opened, then nothing', () => {
    expect(openUsername(randomBytes(32), 'app', parseSealed(sealUsername(key, 'app', HASH, NAME))!)).toBeUndefined();
  });

  it('given the sealed text under another application or hash, or altered, when opened, then nothing', () => {
    const sealed = sealUsername(key, 'app', HASH, NAME);
    expect(openUsername(key, 'other-app', parseSealed(sealed)!)).toBeUndefined();
    expect(openUsername(key, 'app', parseSealed(sealed.replace(HASH, 'cd'.repeat(32)))!)).toBeUndefined();
    const parts = parseSealed(sealed)!;
    parts.payload[14] ^= 1;
    expect(openUsername(key, 'app', parts)).toBeUndefined();
  });

  it('given a plain, redacted or truncated name, then it is not read as sealed', () => {
    expect(parseSealed(NAME)).toBeUndefined();
    expect(parseSealed(`erased:${HASH}`)).toBeUndefined();
    expect(parseSealed(`sealed:v1:${HASH}:AAAA`)).toBeUndefined();
    expect(parseSealed(`sealed:v1:${HASH.slice(1)}:${'A'.repeat(60)}`)).toBeUndefined();
  });
});
