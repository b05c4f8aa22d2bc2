/** How long a consumer's stop waits for its batches in flight: half of main.ts's 30 s shutdown bound. */
export const STOP_WAIT_MS = 15_000;

/** Whether `work` settles (resolves or rejects) within `ms`. */
export async function settlesWithin(work: Promise<unknown> | undefined, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      Promise.resolve(work).then(
        () => true,
        () => true,
      ),
      new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
