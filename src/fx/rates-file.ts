import { unzipSync } from 'fflate';

/**
 * The largest rates file taken, zipped or not, and the largest CSV a zip may unpack to. The ECB's
 * whole history since 1999 is about 2.5 MB of CSV (600 kB zipped); anything far larger is no rates file.
 */
export const MAX_RATES_FILE_BYTES = 16 * 1024 * 1024;

/** The file cannot be read as rates at all (not its lines: those are ecb-rates.ts's problems). */
export class RatesFileError extends Error {}

const isZip = (bytes: Uint8Array) => bytes.length >= 4 && bytes[0] === 0x50 && bytes[1] === 0x4b && bytes[2] === 0x03 && bytes[3] === 0x04;

/**
 * The CSV text of a rates file as the ECB publishes it: the CSV itself, or the .zip holding it
 * (eurofxref.zip, eurofxref-hist.zip: one .csv entry). UTF-8 (the files are ASCII).
 */
export function ratesFileText(bytes: Uint8Array): string {
  if (bytes.length > MAX_RATES_FILE_BYTES) throw new RatesFileError(`the file is over ${MAX_RATES_FILE_BYTES} bytes: no ECB rates file is that large`);
  let csv = bytes;
  if (isZip(bytes)) {
    const refused: string[] = [];
    let entries: Record<string, Uint8Array>;
    try {
      entries = unzipSync(bytes, {
        filter: (f) => {
          if (!f.name.toLowerCase().endsWith('.csv')) return false;
          // Checked before unpacking: the entry's output buffer is this size, and never grows.
          if (f.originalSize > MAX_RATES_FILE_BYTES) refused.push(`${f.name} unpacks to ${f.originalSize} bytes (at most ${MAX_RATES_FILE_BYTES})`);
          return f.originalSize <= MAX_RATES_FILE_BYTES;
        },
      });
    } catch (error) {
      throw new RatesFileError(`not a readable zip file: ${(error as Error).message}`, { cause: error });
    }
    if (refused.length > 0) throw new RatesFileError(refused.join('; '));
    const names = Object.keys(entries);
    if (names.length !== 1)
      throw new RatesFileError(`the zip holds ${names.length} .csv files (expected one, as the ECB's eurofxref.zip and eurofxref-hist.zip)`);
    csv = entries[names[0]];
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(csv);
  } catch {
    throw new RatesFileError('not UTF-8 text (expected the ECB reference-rate CSV, or the .zip holding it)');
  }
}
