import { randomBytes } from 'node:crypto';
import { InvalidParameterError } from '../common/errors.js';
import { CursorSigner, MAX_CURSOR_LENGTH } from './signed-cursor.js';

const refusal = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return e instanceof InvalidParameterError ? { parameter: e.parameter, message: e.message } : e;
  }
  return 'accepted';
};

describe('signed change cursor', () => {
  const signer = new CursorSigner(randomBytes(32));

  it('reads back what it issued, for the same listing and application, any key included', () => {
    for (const c of [
      { position: '17', key: 'alice' },
      { position: '9223372036854775807', key: 'a:b:c' },
      { position: '5', key: 'dé jà ✓' },
      { position: '0', key: '' },
      { position: '3', key: 'x'.repeat(512 * 4) },
    ]) {
      const text = signer.issue('customers', 'app-1', c);
      expect(text).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(text.length).toBeLessThanOrEqual(MAX_CURSOR_LENGTH);
      expect(signer.verify('customers', 'app-1', text)).toEqual(c);
    }
  });

  it('is deterministic: the same position gives the same cursor (an empty page hands back the cursor sent)', () => {
    expect(signer.issue('transactions', 'a', { position: '9', key: 'k' })).toBe(signer.issue('transactions', 'a', { position: '9', key: 'k' }));
  });

  it('reads 0 as the start of the feed', () => {
    expect(signer.verify('transactions', 'a', '0')).toEqual({ position: '0', key: '' });
  });

  it('refuses a cursor of another listing, another application or another key', () => {
    const text = signer.issue('customers', 'app-1', { position: '17', key: 'alice' });
    expect(refusal(() => signer.verify('transactions', 'app-1', text))).toMatchObject({ parameter: 'changedAfter' });
    expect(refusal(() => signer.verify('customers', 'app-2', text))).toMatchObject({ parameter: 'changedAfter' });
    expect(refusal(() => new CursorSigner(randomBytes(32)).verify('customers', 'app-1', text))).toMatchObject({ parameter: 'changedAfter' });
  });

  it('refuses a non-canonical spelling of a genuine cursor (spare bits of the last character set)', () => {
    // 1 + 8 + 1 + 16 = 26 bytes: the last base64url character carries 2 bits and 4 spare ones.
    const text = signer.issue('customers', 'a', { position: '1', key: 'k' });
    expect(text).toHaveLength(35);
    const last = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const twin = text.slice(0, -1) + last[last.indexOf(text.at(-1)!) + 1];
    expect(Buffer.from(twin, 'base64url')).toEqual(Buffer.from(text, 'base64url'));
    expect(refusal(() => signer.verify('customers', 'a', twin))).toMatchObject({ parameter: 'changedAfter' });
  });

  it('tells the holder of a cursor from before signing to restart from 0', () => {
    expect(refusal(() => signer.verify('customers', 'a', Buffer.from('17:alice').toString('base64url')))).toEqual({
      parameter: 'changedAfter',
      message: expect.stringContaining('restart from changedAfter=0'),
    });
  });

  it.each(['', 'abc', '!!', 'MDo=', 'A'.repeat(MAX_CURSOR_LENGTH + 1), Buffer.alloc(25, 1).toString('base64url')])(
    'refuses %j naming the parameter',
    (text) => {
      expect(refusal(() => signer.verify('customers', 'a', text))).toMatchObject({ parameter: 'changedAfter' });
    },
  );

  it('carries the origin (where the client began) when given, signed like the rest; cursors without one read back without one', () => {
    const c = { position: '42', key: 'bob', origin: '40' };
    const text = signer.issue('customers', 'app-1', c);
    expect(signer.verify('customers', 'app-1', text)).toEqual(c);
    expect(Buffer.from(text, 'base64url')[0]).toBe(0x02);
    expect(signer.verify('customers', 'app-1', signer.issue('customers', 'app-1', { position: '42', key: 'bob' }))).toEqual({ position: '42', key: 'bob' });
    // Another origin with the same MAC (a client lowering it to be shown older deletions) is refused.
    const bytes = Buffer.from(text, 'base64url');
    bytes.writeBigUInt64BE(0n, 9);
    expect(refusal(() => signer.verify('customers', 'app-1', bytes.toString('base64url')))).toMatchObject({ parameter: 'changedAfter' });
  });

  it('refuses a key shorter than 32 bytes', () => {
    expect(() => new CursorSigner(randomBytes(16))).toThrow('at least 32 bytes');
  });
});
