import { readLines, type InputLine } from './read-lines.js';

async function lines(chunks: (string | Buffer)[], max: number): Promise<InputLine[]> {
  const out: InputLine[] = [];
  for await (const line of readLines(chunks, max)) out.push(line);
  return out;
}
const text = (l: InputLine) => ({ number: l.number, bytes: l.bytes, value: l.value?.toString() });

describe('readLines', () => {
  it('numbers lines split anywhere across chunks, \\n or \\r\\n, the last one without a newline', async () => {
    const got = await lines(['ab', 'c\nde\r', '\n\n', 'f'], 10);
    expect(got.map(text)).toEqual([
      { number: 1, bytes: 3, value: 'abc' },
      { number: 2, bytes: 2, value: 'de' },
      { number: 3, bytes: 0, value: '' },
      { number: 4, bytes: 1, value: 'f' },
    ]);
    expect((await lines(['a\n'], 10)).map(text)).toEqual([{ number: 1, bytes: 1, value: 'a' }]);
    expect(await lines([], 10)).toEqual([]);
  });

  it('counts a line over the bound without keeping it, and goes on with the next', async () => {
    const got = await lines(['12345', '6789', '01\nok\n', '12345678901\r\n', '1234567890\r\n'], 10);
    expect(got.map(text)).toEqual([
      { number: 1, bytes: 11, value: undefined },
      { number: 2, bytes: 2, value: 'ok' },
      { number: 3, bytes: 11, value: undefined },
      { number: 4, bytes: 10, value: '1234567890' },
    ]);
  });

  it('counts bytes, not characters', async () => {
    const got = await lines([Buffer.from('é€\n')], 4);
    expect(got.map(text)).toEqual([{ number: 1, bytes: 5, value: undefined }]);
  });
});
