import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

// Committed SQL snapshots (issue 40): the statements the code sends, kept as .sql files so every
// change to them shows up in review as a SQL diff. SQL_SNAPSHOTS=write rewrites them instead of comparing.

export const root = path.resolve(import.meta.dirname, '../..');
export const writing = process.env.SQL_SNAPSHOTS === 'write';
export const SYNC = 'npm run sql:sync';

/** One statement as the code builds it; `params` and `prepared` when the builder returns them. */
export type Statement = { name: string; sql: string; params?: readonly unknown[]; prepared?: string };

/** The statement as the code produced it, trimmed, ending with one `;`. */
export const terminated = (sql: string) => {
  const text = sql.trim();
  return text.endsWith(';') ? text : `${text};`;
};

export function renderStatements(preamble: string[], statements: Statement[]): string {
  const seen = new Set<string>();
  const blocks = statements.map((s) => {
    // two cases rendered under one header could not be told apart in a diff
    if (seen.has(s.name)) throw new Error(`two statements are both named "${s.name}": give the cases distinct labels`);
    seen.add(s.name);
    const lines = [`-- ${s.name}`];
    if (s.prepared !== undefined) lines.push(`-- prepared as ${s.prepared}`);
    if (s.params !== undefined) lines.push(`-- params: ${JSON.stringify(s.params)}`);
    lines.push(terminated(s.sql));
    return lines.join('\n');
  });
  return `${[preamble.map((l) => `-- ${l}`).join('\n'), ...blocks].join('\n\n')}\n`;
}

/** The first lines where the two texts part, with a little context, for a failure message. */
export function firstDifference(expected: string, actual: string, context = 3): string {
  const a = expected.split('\n');
  const b = actual.split('\n');
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  const from = Math.max(0, i - context);
  const show = (lines: string[], mark: string) =>
    lines
      .slice(from, i + context + 1)
      .map((l, k) => `${from + k === i ? mark : ' '} ${from + k + 1}: ${l}`)
      .join('\n');
  return `first difference at line ${i + 1}\ncommitted:\n${show(a, '-')}\nthe code now:\n${show(b, '+')}`;
}

/**
 * Compares `content` with the committed file (or writes it when SQL_SNAPSHOTS=write). On a
 * mismatch the error names the file, says what to run, and adds `detail` (which statements differ).
 */
export function checkFile(relative: string, content: string, detail: (committed: string) => string = () => ''): void {
  const file = path.join(root, relative);
  const committed = existsSync(file) ? readFileSync(file, 'utf8') : undefined;
  if (committed === content) return;
  if (writing) {
    writeFileSync(file, content);
    console.log(`sql snapshots: wrote ${relative}`);
    return;
  }
  if (committed === undefined) throw new Error(`${relative} is missing: run \`${SYNC}\` and commit it`);
  throw new Error(
    `${relative} differs from the SQL the code sends now. If the change is intended, run \`${SYNC}\` and commit the file with it.\n` +
      `${detail(committed)}${firstDifference(committed, content)}`,
  );
}

/** A committed snapshot nothing renders any more: removed when writing, a failure otherwise. */
export function checkStale(relative: string): void {
  if (writing) {
    rmSync(path.join(root, relative));
    console.log(`sql snapshots: removed ${relative}`);
    return;
  }
  throw new Error(`${relative} is a SQL snapshot no module renders any more: run \`${SYNC}\` to remove it`);
}

/** The statement headers (`-- name`, at the start of a block) of a statements snapshot, with each block's text. */
export function blocksOf(content: string): Map<string, string> {
  const blocks = new Map<string, string>();
  for (const block of content.split(/\n\n(?=-- )/)) {
    const header = /^-- (.*)$/m.exec(block)?.[1];
    if (header !== undefined) blocks.set(header, block);
  }
  return blocks;
}
