import { accessSync, constants, statSync } from 'node:fs';

/**
 * Why `path`, given as a command's input file, cannot be read, in words a user acts on; undefined
 * when it can be. Checked before the command opens anything: a directory otherwise surfaces as the
 * stream's bare EISDIR, and only once the database and the event log are open.
 * `regular`: the command reads the file twice (an import hashes it, then reads its lines), so a pipe
 * or a device will not do.
 */
export function unreadableInput(path: string, expected: string, o: { regular?: boolean } = {}): string | undefined {
  let stat;
  try {
    stat = statSync(path);
  } catch (error) {
    return reason(error);
  }
  if (stat.isDirectory()) return `it is a directory (expected ${expected})`;
  if (o.regular && !stat.isFile()) return `it is not a regular file (expected ${expected})`;
  try {
    accessSync(path, constants.R_OK);
  } catch (error) {
    return reason(error);
  }
  return undefined;
}

function reason(error: unknown): string {
  const e = error as NodeJS.ErrnoException;
  switch (e.code) {
    case 'ENOENT':
      return 'no such file';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'ENOTDIR':
      return 'a part of the path is not a directory';
    default:
      return e.message;
  }
}
