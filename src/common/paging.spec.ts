import { InvalidParameterError } from './errors.js';
import { PagingRequest } from './paging.js';
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
