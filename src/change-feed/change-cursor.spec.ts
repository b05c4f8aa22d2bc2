import { InvalidParameterError } from '../common/errors.js';
import { FEED_START, decodeCursor, encodeCursor } from './change-cursor.js';

describe('change cursor', () => {
  it('round-trips any key, separators and non-ASCII included', () => {
    for (const c of [
      { position: '17', key: 'alice' },
      { position: '9223372036854775807', key: 'a:b:c' },
      { position: '5', key: 'dé jà ✓' },
      { position: '3', key: '' },
    ]) {
      expect(decodeCursor(encodeCursor(c))).toEqual(c);
    }
  });

  it('reads 0 as the start of the feed', () => {
    expect(decodeCursor('0')).toEqual(FEED_START);
  });

  it.each(['', 'abc', '!!', Buffer.from('x:alice').toString('base64url'), Buffer.from('99999999999999999999:a').toString('base64url'), 'a'.repeat(5000)])(
    'refuses %j naming the parameter',
    (text) => {
      const error = (() => {
        try {
          decodeCursor(text);
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(InvalidParameterError);
      expect((error as InvalidParameterError).parameter).toBe('changedAfter');
    },
  );
});
