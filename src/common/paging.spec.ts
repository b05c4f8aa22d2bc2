import fc from 'fast-check';
import { InvalidParameterError } from './errors.js';
import { MAX_LIMIT, PagingRequest, plainPaging } from './paging.js';
import { validateRequest } from './validate-request.js';

const parse = (query: Record<string, unknown>) => validateRequest(PagingRequest, query);
const failure = (query: Record<string, unknown>) => {
  try {
    parse(query);
  } catch (error) {
    return error as InvalidParameterError;
  }
  throw new Error('expected a validation failure');
};

describe('paging validation', () => {
  it('defaults to skip 0, limit 100', () => {
    expect(parse({})).toMatchObject({ skip: 0, limit: 100 });
  });

  it('accepts integers within bounds', () => {
    expect(parse({ skip: '250', limit: '1000' })).toMatchObject({ skip: 250, limit: 1000 });
    expect(parse({ limit: '0' })).toMatchObject({ limit: 0 });
  });

  it.each([
    [{ skip: '-1' }, 'skip'],
    [{ skip: '1.5' }, 'skip'],
    [{ skip: '' }, 'skip'],
    [{ skip: '0x10' }, 'skip'],
    [{ skip: ['1', '2'] }, 'skip'],
    [{ limit: '1001' }, 'limit'],
    [{ limit: '-1' }, 'limit'],
    [{ limit: 'ten' }, 'limit'],
    [{ offset: '3' }, 'offset'],
  ])('refuses %j naming %s', (query, parameter) => {
    const error = failure(query);
    expect(error).toBeInstanceOf(InvalidParameterError);
    expect(error.parameter).toBe(parameter);
    expect(error.message).toContain(parameter);
  });
});

describe('plainPaging, the shortcut for skip/limit-only queries', () => {
  const value = fc.oneof(
    fc.nat({ max: 2 * MAX_LIMIT }).map(String),
    fc.constantFrom('0', '00', '007', '1000', '1001', '999999999999999', '9999999999999999', '-0', '-1', '+1', '1.0', '1e3', '', ' 1', '0x10', 'ten'),
    fc.array(fc.nat({ max: 10 }).map(String), { minLength: 2, maxLength: 2 }),
    fc.string({ maxLength: 4 }),
  );
  const query = fc.dictionary(fc.constantFrom('skip', 'limit', 'status', 'startdate', '__proto__', 'toString'), value, { maxKeys: 3 });

  it('answers only where validateRequest accepts, and then the same skip and limit', () => {
    fc.assert(
      fc.property(query, (q) => {
        const fast = plainPaging(q);
        if (fast === undefined) return;
        const { skip, limit } = validateRequest(PagingRequest, q);
        expect(fast).toEqual({ skip, limit });
      }),
      { numRuns: 2000 },
    );
  });

  it('takes the usual page requests', () => {
    expect(plainPaging({})).toEqual({ skip: 0, limit: 100 });
    expect(plainPaging({ skip: '500000', limit: '100' })).toEqual({ skip: 500000, limit: 100 });
    expect(plainPaging({ limit: '0' })).toEqual({ skip: 0, limit: 0 });
    expect(plainPaging({ limit: String(MAX_LIMIT) })).toEqual({ skip: 0, limit: MAX_LIMIT });
  });

  it.each([[{ limit: String(MAX_LIMIT + 1) }], [{ skip: '-1' }], [{ skip: ['1', '2'] }], [{ skip: '1', status: 'active' }], [{ skip: '' }]])(
    'leaves %j to validateRequest',
    (q) => {
      expect(plainPaging(q as Record<string, unknown>)).toBeUndefined();
    },
  );
});
