import type { Logger } from '@nestjs/common';

/** How long a consumer's stop waits for its batches in flight: half of main.ts's 30 s shutdown bound. */
const STOP_WAIT_MS = 15_000;

/**
 * A consumer's stop: waits for its batches in flight (`batches()`, asked again after the abort) up to
 * STOP_WAIT_MS; past that ends their transactions through `abort` (nothing of them commits) and
 * waits a third as long again. The log says when either wait runs out.
 */
export async function finishOrEndBatches(batches: () => Promise<unknown> | undefined, abort: AbortController, logger: Logger): Promise<void> {
  if (await settlesWithin(batches(), STOP_WAIT_MS)) return;
  logger.warn({ msg: `batches still in flight after ${STOP_WAIT_MS / 1000} s; ending their transactions (nothing of them is committed)` });
  abort.abort();
  if (!(await settlesWithin(batches(), STOP_WAIT_MS / 3)))
    logger.error({ msg: 'batches in flight did not end with their transactions; stopping without them' });
}

/** Whether `work` settles (resolves or rejects) within `ms`. */
async function settlesWithin(work: Promise<unknown> | undefined, ms: number): Promise<boolean> {
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
