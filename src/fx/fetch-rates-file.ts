import { MAX_RATES_FILE_BYTES } from './rates-file.js';

/** A fetch of FX_RATES_URL that gave no file; the message says why, without the body. */
export class RatesFetchError extends Error {}

/** How long one fetch may take, body included: the ECB's largest file is well under a megabyte zipped. */
export const FETCH_TIMEOUT_MS = 60_000;
/** Redirects followed, each within the URL's own origin (a mirror moving a file, http to a path). */
const MAX_REDIRECTS = 3;

/**
 * The bytes at `url`: a 200 answer of at most MAX_RATES_FILE_BYTES, within FETCH_TIMEOUT_MS.
 * A redirect is followed only within the configured origin: the operator chose the source, and a
 * redirect elsewhere (another host, or https to http) is not what they chose.
 */
export async function fetchRatesFile(url: string, o: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<Uint8Array> {
  const signal = AbortSignal.any([AbortSignal.timeout(o.timeoutMs ?? FETCH_TIMEOUT_MS), ...(o.signal ? [o.signal] : [])]);
  const origin = new URL(url).origin;
  let target = new URL(url);
  try {
    for (let redirects = 0; ; redirects++) {
      const response = await fetch(target, { redirect: 'manual', signal, headers: { accept: 'text/csv, application/zip, */*;q=0.5' } });
      if (response.status >= 300 && response.status < 400) {
        await response.body?.cancel();
        const location = response.headers.get('location');
        if (!location) throw new RatesFetchError(`answered ${response.status} without a Location`);
        const next = new URL(location, target);
        if (next.origin !== origin) throw new RatesFetchError(`redirected to ${next.origin}, another origin than FX_RATES_URL's: not followed`);
        if (redirects >= MAX_REDIRECTS) throw new RatesFetchError(`more than ${MAX_REDIRECTS} redirects`);
        target = next;
        continue;
      }
      if (response.status !== 200) {
        await response.body?.cancel();
        throw new RatesFetchError(`answered ${response.status} ${response.statusText}`.trim());
      }
      return await boundedBody(response);
    }
  } catch (error) {
    if (error instanceof RatesFetchError) throw error;
    if (signal.aborted && (signal.reason as Error)?.name === 'TimeoutError')
      throw new RatesFetchError(`no complete answer within ${(o.timeoutMs ?? FETCH_TIMEOUT_MS) / 1000} s`, { cause: error });
    const cause = (error as Error & { cause?: Error }).cause;
    throw new RatesFetchError(`${(error as Error).message}${cause?.message ? ` (${cause.message})` : ''}`, { cause: error });
  }
}

/** The body, refused as soon as it passes MAX_RATES_FILE_BYTES (a Content-Length is not trusted to tell). */
async function boundedBody(response: Response): Promise<Uint8Array> {
  const declared = Number(response.headers.get('content-length'));
  if (declared > MAX_RATES_FILE_BYTES) {
    await response.body?.cancel();
    throw new RatesFetchError(`the answer is ${declared} bytes (at most ${MAX_RATES_FILE_BYTES})`);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body ?? []) {
    size += chunk.length;
    if (size > MAX_RATES_FILE_BYTES) throw new RatesFetchError(`the answer passed ${MAX_RATES_FILE_BYTES} bytes: not read further`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}
