/** The command line was wrong (exit 2), as opposed to the work failing (exit 1). */
export class UsageError extends Error {}

/** Refuses arguments a command does not take, instead of silently ignoring them. */
export function refuseExtraArguments(command: string, args: readonly string[], takes = 0): void {
  if (args.length > takes)
    throw new UsageError(
      `${command} takes ${takes === 0 ? 'no arguments' : `at most ${takes} argument${takes === 1 ? '' : 's'}`} (got ${JSON.stringify(args[takes])}; options are given as --name value)`,
    );
}
