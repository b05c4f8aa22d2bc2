import { RejectCode } from '../../events/decode-event.js';
import { fitDeadLetter } from './dead-letter-message.js';

const letter = (value: Buffer, key: Buffer | null = Buffer.from([0, 1, 0])) => ({
  topic: 'events',
  partition: 2,
  offset: '41',
  key,
  value,
  code: RejectCode.NotJson,
  reason: 'not JSON',
});

describe('fitDeadLetter', () => {
  it('copies key bytes (NUL included) and value, with headers naming the source', () => {
    const m = fitDeadLetter(letter(Buffer.from('{oops')), 1_048_588);
    expect(m.key).toEqual(Buffer.from([0, 1, 0]));
    expect(m.value).toEqual(Buffer.from('{oops'));
    expect(m.headers).toEqual({
      'dlq-reason-code': 'not_json',
      'dlq-reason': 'not JSON',
      'dlq-source-topic': 'events',
      'dlq-source-partition': '2',
      'dlq-source-offset': '41',
    });
  });

  it('truncates a copy that would not fit the broker limit, and says so', () => {
    const big = Buffer.alloc(1_048_000, 0x61);
    const m = fitDeadLetter(letter(big), 1_048_588);
    const headers = Object.entries(m.headers as Record<string, string>).reduce((n, [k, v]) => n + k.length + v.length, 0);
    // what the broker counts, with a kilobyte to spare for record framing
    expect((m.value as Buffer).length + (m.key as Buffer).length + headers).toBeLessThan(1_048_588 - 1024);
    expect((m.value as Buffer).length).toBeGreaterThan(1_040_000);
    expect(m.headers).toMatchObject({ 'dlq-truncated': 'true', 'dlq-original-bytes': '1048000' });
  });
});
