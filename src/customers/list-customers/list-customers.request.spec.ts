import { InvalidParameterError } from '../../common/errors.js';
import { hasFilters, parseCustomerFilters } from './customer-filters.js';
import { parseListCustomersRequest } from './list-customers.request.js';

const refusal = (query: Record<string, unknown>, raw: string) => {
  try {
    parseListCustomersRequest(query, raw);
  } catch (error) {
    return error as InvalidParameterError;
  }
  throw new Error('expected a refusal');
};

describe('GET /v2/customers parameters', () => {
  it('a lookup by name alone has no filters and reads the names from the raw query', () => {
    const parsed = parseListCustomersRequest({ applicationUsername: 'alice,doe, john' }, 'applicationUsername=alice,doe%2C%20john');
    expect(parsed).toEqual({ kind: 'usernames', usernames: ['alice', 'doe, john'], filters: {} });
    expect(parsed.kind === 'usernames' && hasFilters(parsed.filters)).toBe(false);
  });

  it('a lookup keeps the filters given beside the names, and ignores skip and limit', () => {
    const parsed = parseListCustomersRequest(
      { applicationUsername: 'alice', skip: '5', limit: '7', status: 'active', expiresAfter: '2024-03-01T00:00:00Z' },
      'applicationUsername=alice&skip=5&limit=7&status=active&expiresAfter=2024-03-01T00:00:00Z',
    );
    expect(parsed).toEqual({ kind: 'usernames', usernames: ['alice'], filters: { statuses: ['active'], expiresAfter: new Date('2024-03-01T00:00:00Z') } });
  });

  it('a lookup still refuses an unknown parameter and a bad filter, naming them', () => {
    expect(refusal({ applicationUsername: 'alice', startDate: 'x' }, 'applicationUsername=alice&startDate=x')).toMatchObject({ parameter: 'startDate' });
    expect(refusal({ applicationUsername: 'alice', expiresBefore: 'soon' }, 'applicationUsername=alice&expiresBefore=soon')).toMatchObject({
      parameter: 'expiresBefore',
    });
  });

  it('a filter not given is no key at all, so an unfiltered page stays unfiltered', () => {
    expect(parseCustomerFilters({ skip: '0' })).toEqual({});
    expect(Object.keys(parseCustomerFilters({ expiresBefore: '2024-03-01T00:00:00Z' }))).toEqual(['expiresBefore']);
    expect(Object.keys(parseCustomerFilters({ expiresAfter: '2024-03-01T00:00:00Z' }))).toEqual(['expiresAfter']);
    const page = parseListCustomersRequest({ skip: '10' }, 'skip=10');
    expect(page).toEqual({ kind: 'page', skip: 10, limit: 100, filters: {} });
  });
});
