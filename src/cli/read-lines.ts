/** One line of the input: its number (from 1), its length in bytes, and its bytes unless it is longer than the bound. */
export type InputLine = { number: number; bytes: number; value?: Buffer };

const NEWLINE = 0x0a;
const CR = 0x0d;

/**
 * Splits a byte stream into lines (\n, or \r\n) holding at most `maxBytes` of one line in memory: a
 * longer line is only counted, so a file of any shape is read in memory bounded by the bound and
 * the stream's chunk size. The last line needs no newline.
 */
export async function* readLines(input: AsyncIterable<Buffer | string> | Iterable<Buffer | string>, maxBytes: number): AsyncGenerator<InputLine> {
  let number = 0;
  let parts: Buffer[] = [];
  let bytes = 0;
  let over = false;
  let last = -1;
  const take = (piece: Buffer) => {
    bytes += piece.length;
    if (piece.length > 0) last = piece[piece.length - 1];
    if (over) return;
    // one byte over the bound may be a \r that ends the line
    if (bytes > maxBytes + 1) {
      over = true;
      parts = [];
    } else parts.push(piece);
  };
  const end = (): InputLine => {
    number++;
    let line: InputLine;
    if (over) line = { number, bytes: last === CR ? bytes - 1 : bytes };
    else {
      let value = Buffer.concat(parts, bytes);
      if (value.length > 0 && value[value.length - 1] === CR) value = value.subarray(0, value.length - 1);
      line = value.length > maxBytes ? { number, bytes: value.length } : { number, bytes: value.length, value };
    }
    parts = [];
    bytes = 0;
    over = false;
    last = -1;
    return line;
  };
  for await (const data of input) {
    const chunk = typeof data === 'string' ? Buffer.from(data) : data;
    let from = 0;
    for (let nl = chunk.indexOf(NEWLINE, from); nl !== -1; nl = chunk.indexOf(NEWLINE, from)) {
      take(chunk.subarray(from, nl));
      yield end();
      from = nl + 1;
    }
    if (from < chunk.length) take(chunk.subarray(from));
  }
  if (bytes > 0) yield end();
}
