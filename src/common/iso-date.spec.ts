import { isoDateTimeProblem, parseIsoDateTime } from './iso-date.js';

describe('parseIsoDateTime', () => {
  it.each([
    ['2024-03-01T00:00:00.000Z', '2024-03-01T00:00:00.000Z'],
    ['2024-03-01T02:00:00+02:00', '2024-03-01T00:00:00.000Z'],
    ['2024-03-01T02:00:00+0200', '2024-03-01T00:00:00.000Z'],
    ['2024-02-29T23:30:00-01:00', '2024-03-01T00:30:00.000Z'],
    ['2024-03-01T00:00:00.123456Z', '2024-03-01T00:00:00.123Z'],
    ['2024-03-01T00:00:00.5Z', '2024-03-01T00:00:00.500Z'],
    ['2024-03-01T10:20Z', '2024-03-01T10:20:00.000Z'],
    ['2024-03-01T10:20:30', '2024-03-01T10:20:30.000Z'],
    ['2024-03-01', '2024-03-01T00:00:00.000Z'],
  ])('reads %s as %s', (input, expected) => {
    expect(parseIsoDateTime(input)?.toISOString()).toBe(expected);
  });

  it.each([
    '',
    'yesterday',
    '2024-02-30T00:00:00Z',
    '2023-02-29',
    '2024-13-01',
    '2024-01-01T24:00:00Z',
    '2024-01-01T10:61:00Z',
    '1709251200000',
    '2024-01-01T00:00:00+25:00',
    '2024/01/01',
  ])('refuses %j', (input) => {
    expect(parseIsoDateTime(input)).toBeUndefined();
  });
});

describe('parseIsoDateTime, years below 100', () => {
  it('reads them literally, not as 19xx', () => {
    expect(parseIsoDateTime('0030-01-01')?.toISOString()).toBe('0030-01-01T00:00:00.000Z');
    expect(parseIsoDateTime('0000-06-15T12:00:00Z')?.getUTCFullYear()).toBe(0);
    expect(parseIsoDateTime('0099-12-31T23:59:59.999+01:00')?.toISOString()).toBe('0099-12-31T22:59:59.999Z');
  });
});

describe('isoDateTimeProblem', () => {
  it('says a space before the offset is an unencoded +, and shows %2B', () => {
    for (const raw of ['2024-03-01T02:00:00 02:00', '2024-03-01T02:00 0200', '2024-03-01 02:00:00.123 02', ' 2024-03-01T02:00:00 02:00 ']) {
      const message = isoDateTimeProblem('startdate', raw);
      expect(message).toMatch(/^startdate has a space before its offset/);
      expect(message).toContain('%2B');
      expect(message).not.toContain('+02');
    }
  });

  it('otherwise gives the format, its offset example encoded', () => {
    for (const raw of ['yesterday', '2024-02-30', undefined, 42]) {
      const message = isoDateTimeProblem('expiresBefore', raw);
      expect(message).toBe(
        'expiresBefore must be an ISO 8601 date-time such as 2024-03-01T00:00:00.000Z or 2024-03-01T02:00:00%2B02:00 (a + must be sent as %2B)',
      );
    }
  });
});
