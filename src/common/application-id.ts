/**
 * The one rule for an application (tenant) id, shared by the event contract, bearer tokens and the
 * CLI, so that nothing mints or accepts an id that can never name stored rows.
 */
export const MAX_APPLICATION_ID_BYTES = 200;

/** No control characters (C0, DEL, C1): ids appear in logs, headers and file names. NUL cannot be stored. */
export const APPLICATION_ID_PATTERN = '^[^\\u0000-\\u001f\\u007f-\\u009f]+$';
const PATTERN = new RegExp(APPLICATION_ID_PATTERN, 'u');

/** Why `value` is not an application id, or undefined when it is one. */
export function applicationIdProblem(value: string): string | undefined {
  if (value.length === 0) return 'must not be empty';
  if (!value.isWellFormed()) return 'contains an unpaired UTF-16 surrogate (not valid Unicode)';
  const bytes = Buffer.byteLength(value, 'utf8');
  if (bytes > MAX_APPLICATION_ID_BYTES) return `is ${bytes} bytes in UTF-8; at most ${MAX_APPLICATION_ID_BYTES}`;
  if (!PATTERN.test(value)) return 'contains a control character';
  return undefined;
}
