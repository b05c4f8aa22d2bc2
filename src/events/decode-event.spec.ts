import { readFileSync } from 'node:fs';
import { decodeEvent, RejectCode } from './decode-event.js';
import { receiptLinkedSchema, customerErasedSchema, transactionUpdatedSchema } from './event-schemas.js';

const tx = (data: Record<string, unknown> = {}, envelope: Record<string, unknown> = {}) =>
  JSON.stringify({
    specversion: '1.0',
    id: 'e1',
    source: 'apple-notifications',
    type: 'transaction.updated',
    time: '2024-03-01T02:00:00.123456+02:00',
    appid: 'app-1',
    datacontenttype: 'application/json',
    data: { transactionId: 'apple:t1', purchaseId: 'apple:p1', productId: 'apple:monthly', platform: 'apple', receiptId: 'apple:r1', ...data },
    ...envelope,
  });

describe('decodeEvent', () => {
  it('keeps the source and, read from a log, when the log received the event, in the form of time', () => {
    const fromLog = decodeEvent(Buffer.from(tx()), { receivedAt: Date.parse('2024-03-01T00:00:01.250Z') });
    expect(fromLog.ok && fromLog.event).toMatchObject({ source: 'apple-notifications', receivedAt: '2024-03-01T00:00:01.250000Z' });
    const outside = decodeEvent(Buffer.from(tx()));
    expect(outside.ok && outside.event.receivedAt).toBeUndefined();
  });

  it('normalises time to UTC microseconds and amounts to one spelling', () => {
    const decoded = decodeEvent(Buffer.from(tx({ priceUSD: 1.5, priceMicros: 1500000, purchaseDate: '2024-01-01T00:00:00Z', extraField: 'ignored' })));
    expect(decoded).toEqual({
      ok: true,
      event: {
        id: 'e1',
        appId: 'app-1',
        source: 'apple-notifications',
        time: '2024-03-01T00:00:00.123456Z',
        type: 'transaction.updated',
        data: {
          transactionId: 'apple:t1',
          purchaseId: 'apple:p1',
          productId: 'apple:monthly',
          platform: 'apple',
          receiptId: 'apple:r1',
          purchaseDate: '2024-01-01T00:00:00.000000Z',
          amountUSD: 1.5,
          amountMicros: 1500000,
        },
      },
    });
  });

  it('accepts receipt.linked', () => {
    const raw = JSON.stringify({
      specversion: '1.0',
      id: 'e2',
      source: 's',
      type: 'receipt.linked',
      time: '2024-01-01T00:00:00Z',
      appid: 'a',
      data: { receiptId: 'google:r', applicationUsername: 'bob' },
    });
    expect(decodeEvent(raw)).toMatchObject({ ok: true, event: { type: 'receipt.linked', data: { receiptId: 'google:r', applicationUsername: 'bob' } } });
  });

  it.each([
    ['not JSON', '{"specversion":', RejectCode.NotJson],
    ['a JSON array', '[]', RejectCode.SchemaViolation],
    ['an unknown type', tx({}, { type: 'subscription.cancelled' }), RejectCode.UnknownType],
    ['a missing appid', tx({}, { appid: undefined }), RejectCode.SchemaViolation],
    ['a wrong specversion', tx({}, { specversion: '0.3' }), RejectCode.SchemaViolation],
    ['a time without zone', tx({}, { time: '2024-01-01T00:00:00' }), RejectCode.SchemaViolation],
    ['a missing transactionId', tx({ transactionId: undefined }), RejectCode.SchemaViolation],
    ['a transactionId without platform prefix', tx({ transactionId: 't1' }), RejectCode.BadIdentifier],
    ['a receiptId of another platform', tx({ receiptId: 'google:r1' }), RejectCode.BadIdentifier],
    ['a non-boolean flag', tx({ isExpired: 'yes' }), RejectCode.SchemaViolation],
    ['disagreeing amounts', tx({ amountUSD: 1, priceUSD: 2 }), RejectCode.SchemaViolation],
    ['a bad currency', tx({ currency: 'dollars' }), RejectCode.SchemaViolation],
  ])('rejects %s', (_, raw, code) => {
    const decoded = decodeEvent(raw);
    expect(decoded.ok).toBe(false);
    if (!decoded.ok) {
      expect(decoded.code).toBe(code);
      expect(decoded.reason.length).toBeGreaterThan(5);
    }
  });

  it.each([
    ['a NUL in an id', tx({ transactionId: 'apple:t\u0000x' }), '/data/transactionId: contains a NUL character'],
    ['a NUL in a username', tx({ applicationUsername: 'al\u0000ice' }), '/data/applicationUsername: contains a NUL character'],
    ['a NUL in a field name', tx({ 'weird\u0000': 1 }), 'contains a NUL character'],
    ['an unpaired surrogate', tx({ applicationUsername: 'a\ud800b' }), 'unpaired UTF-16 surrogate'],
    ['a time in year 0000', tx({}, { time: '0000-01-01T00:00:00Z' }), '/time 0000-01-01T00:00:00Z is outside the years 0001-9999'],
    ['a time beyond 9999 in UTC', tx({}, { time: '9999-12-31T23:00:00-02:00' }), 'outside the years 0001-9999 in UTC'],
    ['a purchaseDate in year 0000', tx({ purchaseDate: '0000-03-01T00:00:00Z' }), '/data/purchaseDate'],
    ['an id over 512 bytes of UTF-8', tx({ transactionId: 'apple:' + 'é'.repeat(300) }), '/data/transactionId: 606 bytes in UTF-8; at most 512'],
  ])('refuses what PostgreSQL cannot store: %s', (_, raw, reason) => {
    expect(decodeEvent(raw)).toEqual({ ok: false, code: RejectCode.Unstorable, reason: expect.stringContaining(reason) });
  });

  it('refuses an event timed further ahead of its log timestamp than the allowed skew, deterministically', () => {
    const receivedAt = Date.parse('2024-03-01T00:00:00Z');
    const raw = tx({}, { time: '2024-03-02T00:00:01Z' });
    expect(decodeEvent(raw, { receivedAt })).toMatchObject({
      ok: false,
      code: RejectCode.FutureTime,
      reason: expect.stringContaining('/time 2024-03-02T00:00:01.000000Z is more than 86400 s ahead'),
    });
    expect(decodeEvent(raw, { receivedAt: receivedAt + 1000 })).toMatchObject({ ok: true });
    expect(decodeEvent(raw, { receivedAt, maxFutureSkewMs: 2 * 86_400_000 })).toMatchObject({ ok: true });
    expect(decodeEvent(tx({}, { time: '9999-01-01T00:00:00Z' }))).toMatchObject({ ok: false, code: RejectCode.FutureTime });
  });

  it('names the missing property', () => {
    const decoded = decodeEvent(tx({ receiptId: undefined }));
    expect(decoded).toMatchObject({ ok: false, reason: expect.stringContaining('receiptId') });
  });
});

describe('published JSON Schemas (docs/events)', () => {
  it.each([
    ['transaction.updated', transactionUpdatedSchema],
    ['receipt.linked', receiptLinkedSchema],
    ['customer.erased', customerErasedSchema],
  ])('docs/events/%s.v1.schema.json is the schema the consumer enforces', (type, schema) => {
    const published = JSON.parse(readFileSync(new URL(`../../docs/events/${type}.v1.schema.json`, import.meta.url), 'utf8'));
    expect(published).toEqual(JSON.parse(JSON.stringify(schema)));
  });
});

describe('normalizeTime', () => {
  it.each([
    ['2024-03-01T00:00:00.123Z', '2024-03-01T00:00:00.123000Z'],
    ['2024-03-01T00:00:00Z', '2024-03-01T00:00:00.000000Z'],
    ['2024-03-01T02:00:00.5+02:00', '2024-03-01T00:00:00.500000Z'],
    ['2024-03-01T00:00:00.1234567Z', '2024-03-01T00:00:00.123456Z'],
    ['2024-02-29t10:00:00z', '2024-02-29T10:00:00.000000Z'],
  ])('%s -> %s', async (input, expected) => {
    const { normalizeTime } = await import('./event-time.js');
    expect(normalizeTime(input)).toBe(expected);
  });

  it.each(['2024-13-01T00:00:00.000Z', '2024-03-01T24:00:00Z', '2024-03-01 00:00:00Z', '2024-03-01T00:00:00'])('refuses %s', async (input) => {
    const { normalizeTime } = await import('./event-time.js');
    expect(normalizeTime(input)).toBeUndefined();
  });
});

describe('customer.erased', () => {
  const erased = (data: object) =>
    JSON.stringify({ specversion: '1.0', id: 'e1', source: 's', type: 'customer.erased', time: '2026-03-01T00:00:00Z', appid: 'a', data });
  it('takes a keyed hash or a username, not both and not neither', () => {
    expect(decodeEvent(erased({ usernameHash: 'a'.repeat(64) }))).toMatchObject({
      ok: true,
      event: { type: 'customer.erased', data: { usernameHash: 'a'.repeat(64) } },
    });
    expect(decodeEvent(erased({ applicationUsername: 'alice' }))).toMatchObject({ ok: true, event: { data: { applicationUsername: 'alice' } } });
    expect(decodeEvent(erased({}))).toMatchObject({ ok: false, code: 'schema_violation' });
    expect(decodeEvent(erased({ usernameHash: 'a'.repeat(64), applicationUsername: 'alice' }))).toMatchObject({ ok: false, code: 'schema_violation' });
    expect(decodeEvent(erased({ usernameHash: 'not-hex' }))).toMatchObject({ ok: false, code: 'schema_violation' });
  });
});
