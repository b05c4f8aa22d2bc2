import { applicationIdProblem } from './application-id.js';
import { decodeEvent } from '../events/decode-event.js';

// Expected answers written from the rule in docs/events/README.md: 1-200 UTF-8 bytes of valid
// Unicode without control characters (U+0000-U+001F, U+007F-U+009F).
const cases: [string, string, boolean][] = [
  ['plain', 'demo-app', true],
  ['200 ASCII bytes', 'a'.repeat(200), true],
  ['100 two-byte characters (200 bytes)', 'é'.repeat(100), true],
  ['space and punctuation', 'com.example app/1', true],
  ['emoji', 'app-🎉', true],
  ['empty', '', false],
  ['201 bytes', 'a'.repeat(201), false],
  ['101 two-byte characters (202 bytes)', 'é'.repeat(101), false],
  ['NUL', 'a\u0000b', false],
  ['tab', 'a\tb', false],
  ['newline', 'a\nb', false],
  ['escape', 'a\u001bb', false],
  ['DEL', 'a\u007fb', false],
  ['C1 next line', 'a\u0085b', false],
  ['C1 end', 'a\u009fb', false],
  ['U+00A0 (not a control character)', 'a\u00a0b', true],
  ['lone surrogate', 'a\ud800b', false],
];

describe('application id rule', () => {
  it.each(cases)('%s: valid=%s', (_name, value, valid) => {
    expect(applicationIdProblem(value) === undefined).toBe(valid);
  });

  // The event contract enforces the same rule, so a token for an id events can never carry is never minted.
  it.each(cases.filter(([, value]) => !value.includes('\u0000') && value.isWellFormed()))('the event decoder agrees: %s', (_name, value, valid) => {
    const event = {
      specversion: '1.0',
      id: 'e1',
      source: 's',
      type: 'receipt.linked',
      time: '2024-01-01T00:00:00Z',
      appid: value,
      data: { receiptId: 'google:r', applicationUsername: 'bob' },
    };
    expect(decodeEvent(JSON.stringify(event)).ok).toBe(valid);
  });
});
