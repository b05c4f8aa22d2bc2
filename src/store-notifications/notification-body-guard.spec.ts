import { JsonShapeScanner } from './notification-body-guard.js';

const scan = (text: string, chunkSize = text.length || 1) => {
  const scanner = new JsonShapeScanner({ maxDepth: 3, maxEntries: 4 });
  const bytes = Buffer.from(text);
  for (let i = 0; i < bytes.length; i += chunkSize) {
    const why = scanner.push(bytes.subarray(i, i + chunkSize));
    if (why) return why;
  }
  return undefined;
};

describe('JsonShapeScanner', () => {
  it('passes what a store sends: one member, or a push three levels deep', () => {
    expect(scan('{"signedPayload":"a.b.c"}')).toBeUndefined();
    expect(scan('{"message":{"attributes":{"k":"v"},"data":"eyJ9","messageId":"1"},"subscription":"s"}')).toBeUndefined();
  });

  it('refuses one level too deep and one entry too many, whichever way the bytes are split', () => {
    for (const size of [1, 2, 7, 1000]) {
      expect(scan('[[[[]]]]', size)).toMatch(/deeper than 3/);
      expect(scan('[1,2,3,4,5]', size)).toMatch(/4 entries/);
      expect(scan('[1,2,3,4]', size)).toBeUndefined();
    }
  });

  it('does not count brackets, commas or escaped quotes inside strings', () => {
    expect(scan('{"s":"[[[[,,,,,]]]]\\\\","t":"\\"[[[[,,,,"}')).toBeUndefined();
    expect(scan('{"s":"\\"","d":[[[[]]]]}', 3)).toMatch(/deeper than 3/);
  });
});
