import { InvalidParameterError } from '../../common/errors.js';
import { parseApplicationUsernames } from './application-usernames.js';

describe('parseApplicationUsernames', () => {
  it('is undefined when the parameter is absent', () => {
    expect(parseApplicationUsernames('skip=1&limit=2')).toBeUndefined();
    expect(parseApplicationUsernames('')).toBeUndefined();
  });

  it('splits on literal commas first, then decodes each part', () => {
    expect(parseApplicationUsernames('applicationUsername=doe%2C%20john,alice')).toEqual(['doe, john', 'alice']);
  });

  it('decodes + as a space and %2B as a plus', () => {
    expect(parseApplicationUsernames('applicationUsername=a+b,c%2Bd')).toEqual(['a b', 'c+d']);
  });

  it('merges repeated parameters, drops empty parts and duplicates', () => {
    expect(parseApplicationUsernames('applicationUsername=a,,b&skip=3&applicationUsername=b,c,')).toEqual(['a', 'b', 'c']);
  });

  it('recognises an encoded parameter name', () => {
    expect(parseApplicationUsernames('application%55sername=x')).toEqual(['x']);
  });

  it('refuses an empty list, bad percent-encoding and more than 1000 names, naming the parameter', () => {
    for (const raw of [
      'applicationUsername=',
      'applicationUsername=,,',
      'applicationUsername=%E0%A4%A',
      `applicationUsername=${Array.from({ length: 1001 }, (_, i) => i).join(',')}`,
    ]) {
      expect(() => parseApplicationUsernames(raw)).toThrow(InvalidParameterError);
      try {
        parseApplicationUsernames(raw);
      } catch (error) {
        expect((error as InvalidParameterError).parameter).toBe('applicationUsername');
      }
    }
    expect(parseApplicationUsernames(`applicationUsername=${Array.from({ length: 1000 }, (_, i) => i).join(',')}`)).toHaveLength(1000);
  });
});
