import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ADVISORY_LOCKS } from './advisory-locks.js';

// The registry is the only place a lock number is written: every advisory lock call in src/ takes
// its key as a parameter or names a registry constant, and no two constants share a number.

const SRC = join(import.meta.dirname, '..');
const sources = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'migrations' ? [] : sources(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.spec.ts') ? [path] : [];
  });

describe('advisory lock registry', () => {
  it('gives every lock its own number', () => {
    const numbers = Object.values(ADVISORY_LOCKS);
    expect(new Set(numbers).size).toBe(numbers.length);
  });

  it('is where every advisory lock call of src/ takes its first key from', () => {
    const names = new Set(Object.keys(ADVISORY_LOCKS));
    const strays: string[] = [];
    for (const file of sources(SRC)) {
      if (file.endsWith('advisory-locks.ts')) continue;
      const text = readFileSync(file, 'utf8');
      for (const call of text.matchAll(/pg_(?:try_)?advisory_(?:xact_)?(?:un)?lock(?:_shared)?\(\s*([^,)]+)/g)) {
        const key = call[1].trim();
        const named = /^\$\{(\w+)\}$/.exec(key);
        if (/^\$\d+/.test(key) || (named && names.has(named[1]))) continue;
        strays.push(`${relative(SRC, file)}: ${call[0]}`);
      }
      // a lock number of its own, in any form
      for (const literal of text.matchAll(/\b(727_?\d{3}|7_?186_?073_?968)\b/g)) strays.push(`${relative(SRC, file)}: ${literal[0]}`);
    }
    expect(strays).toEqual([]);
  });
});
