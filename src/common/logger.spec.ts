import { redactQuery } from './logger.js';

describe('redactQuery', () => {
  it('hides the values of secret and personal-data parameters, keeps the rest', () => {
    expect(redactQuery('/v2/customers?access_token=eyJx.y.z&limit=5&applicationUsername=alice%40x.io,bob')).toBe(
      '/v2/customers?access_token=[redacted]&limit=5&applicationUsername=[redacted]',
    );
    expect(redactQuery('/v2/transactions?skip=1')).toBe('/v2/transactions?skip=1');
    expect(redactQuery('/health/live')).toBe('/health/live');
    expect(redactQuery('/x?%61ccess_token=secret')).toBe('/x?%61ccess_token=[redacted]');
  });
});
