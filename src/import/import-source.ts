import { createHash } from 'node:crypto';
import { createReadStream, statSync } from 'node:fs';
import { readLines } from '../cli/read-lines.js';
import type { SourceLine } from './import-runner.js';

/** Longest input line an import takes: a transaction id and a username are far shorter. */
export const IMPORT_LINE_MAX_BYTES = 4096;

/** SHA-256 of a file, hex: the journal's name for "this source". */
export async function fileDigest(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** A file's lines, numbered from 1 and streamed (memory bounded by IMPORT_LINE_MAX_BYTES), with the share read so far. */
export function fileLines(file: string): { lines: AsyncIterable<SourceLine>; fraction: () => number | undefined } {
  const size = statSync(file).size;
  let read = 0;
  async function* lines(): AsyncGenerator<SourceLine> {
    for await (const l of readLines(createReadStream(file), IMPORT_LINE_MAX_BYTES)) {
      read += l.bytes + 1;
      yield { line: l.number, bytes: l.bytes, text: l.value?.toString('utf8') };
    }
  }
  return { lines: lines(), fraction: () => (size > 0 ? Math.min(1, read / size) : 1) };
}
