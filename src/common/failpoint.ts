/**
 * Crash points for fault-injection tests: FAILPOINTS="after-db-commit:3" kills the process with
 * SIGKILL the 3rd time that point is reached. Unset (always, outside tests) it costs one lookup.
 */
const armed = new Map<string, number>(
  (process.env.FAILPOINTS ?? '')
    .split(',')
    .filter(Boolean)
    .map((spec) => {
      const [name, count] = spec.split(':');
      return [name.trim(), Number(count ?? 1)] as [string, number];
    }),
);

export function failpoint(name: string): void {
  const remaining = armed.get(name);
  if (remaining === undefined) return;
  if (remaining <= 1) process.kill(process.pid, 'SIGKILL');
  armed.set(name, remaining - 1);
}
