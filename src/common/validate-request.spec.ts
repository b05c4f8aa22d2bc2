import { ListCustomersRequest, parseListCustomersRequest } from '../customers/list-customers/list-customers.request.js';
import { parseListTransactionsRequest } from '../transactions/list-transactions/list-transactions.request.js';
import { InvalidParameterError } from './errors.js';
import { PagingRequest } from './paging.js';
import { validateRequest } from './validate-request.js';

const refusal = (run: () => unknown): InvalidParameterError => {
  try {
    run();
  } catch (error) {
    if (error instanceof InvalidParameterError) return error;
    throw error;
  }
  throw new Error('expected a refusal');
};

describe('a parameter given more than once', () => {
  it.each([
    [{ limit: ['1', '2'] }, 'limit', 'twice'],
    [{ skip: ['1', '1', '1'] }, 'skip', '3 times'],
    // valid values each: the repetition is the problem, not the value
    [{ limit: ['10', '10'] }, 'limit', 'twice'],
  ])('%j is refused as repeated, naming %s', (query, parameter, times) => {
    const error = refusal(() => validateRequest(PagingRequest, query));
    expect(error.parameter).toBe(parameter);
    expect(error.message).toBe(`${parameter} must be given once; it is given ${times}`);
    expect(error.message).not.toContain('integer');
  });

  it.each(['status', 'renewalIntent', 'productId', 'expiresBefore', 'expiresAfter', 'limit', 'skip'])('GET /v2/customers: %s twice', (name) => {
    const error = refusal(() => parseListCustomersRequest({ [name]: ['1', '2'] }, `${name}=1&${name}=2`));
    expect(error).toMatchObject({ parameter: name, message: `${name} must be given once; it is given twice` });
  });

  it.each(['startdate', 'enddate', 'transactionId', 'purchaseId', 'productId', 'platform', 'sandbox', 'limit', 'skip'])(
    'GET /v2/transactions: %s twice',
    (name) => {
      const error = refusal(() => parseListTransactionsRequest({ [name]: ['2024-01-01', '2024-01-02'] }));
      expect(error).toMatchObject({ parameter: name, message: `${name} must be given once; it is given twice` });
    },
  );

  it('still takes applicationUsername repeated: it is validated element by element', () => {
    expect(validateRequest(ListCustomersRequest, { applicationUsername: ['alice', 'bob'] })).toMatchObject({ applicationUsername: ['alice', 'bob'] });
  });
});

describe('a date-time whose + arrived as a space', () => {
  it.each([
    ['startdate', () => parseListTransactionsRequest({ startdate: '2024-03-01T02:00:00 02:00' })],
    ['enddate', () => parseListTransactionsRequest({ enddate: '2024-03-01T02:00 0200' })],
    ['expiresBefore', () => parseListCustomersRequest({ expiresBefore: '2024-03-01T02:00:00.5 02:00' }, 'expiresBefore=2024-03-01T02:00:00.5+02:00')],
  ])('%s: the hint shows the + encoded', (parameter, run) => {
    const error = refusal(run);
    expect(error.parameter).toBe(parameter);
    expect(error.message).toContain('%2B02:00');
    expect(error.message).not.toContain('+02:00');
  });

  it('any other unparseable date also shows its offset example encoded', () => {
    const error = refusal(() => parseListTransactionsRequest({ startdate: 'yesterday' }));
    expect(error).toMatchObject({ parameter: 'startdate' });
    expect(error.message).toContain('2024-03-01T02:00:00%2B02:00');
    expect(error.message).not.toMatch(/\+\d/);
  });
});
