import { AppStoreServerAPIClient, Environment } from '@apple/app-store-server-library';
import type { Response as LibraryResponse } from 'node-fetch';
import type { AppleApiKey, AppleApp } from '../../config/app-config.js';
import { ImportFatalError, StoreRetryableError } from '../import-errors.js';
import { parseRetryAfter } from '../store-retry.js';

/** One request to the App Store Server API may take this long before it counts as a network failure (retried). */
export const APPLE_REQUEST_TIMEOUT_MS = 30_000;

const APPLE_URLS = { Production: 'https://api.storekit.apple.com', Sandbox: 'https://api.storekit-sandbox.apple.com' } as const;

/**
 * Apple's AppStoreServerAPIClient (its bearer tokens, paths, query parameters and response
 * validators), sending to APPLE_API_BASE_URL when set (the library only knows Apple's hosts) with
 * a timeout, and turning what a retry can cure into StoreRetryableError: 429 (with Retry-After),
 * 5xx and network failures. A 401 stops the import: no later request would pass either.
 */
export class AppleApiClient extends AppStoreServerAPIClient {
  private readonly base: string;

  constructor(
    private readonly appId: string,
    key: AppleApiKey,
    app: AppleApp,
    baseUrl: string | undefined,
  ) {
    super(key.privateKey, key.keyId, key.issuerId, app.bundleId, app.environment === 'Production' ? Environment.PRODUCTION : Environment.SANDBOX);
    this.base = (baseUrl ?? APPLE_URLS[app.environment]).replace(/\/+$/, '');
  }

  protected override async makeFetchRequest(
    path: string,
    query: URLSearchParams,
    method: string,
    body: string | Buffer | undefined,
    headers: { [key: string]: string },
  ): Promise<LibraryResponse> {
    const what = `${method} ${path}`;
    let response: Response;
    try {
      response = await fetch(`${this.base}${path}?${query}`, { method, body, headers, signal: AbortSignal.timeout(APPLE_REQUEST_TIMEOUT_MS) });
    } catch (error) {
      throw new StoreRetryableError(`the App Store Server API could not be reached (${what}: ${(error as Error).message})`, {
        reason: 'unavailable',
        cause: error,
      });
    }
    if (response.status === 429) {
      await response.body?.cancel();
      throw new StoreRetryableError(`the App Store Server API is rate limiting (429, ${what})`, {
        reason: 'rate-limited',
        retryAfterMs: parseRetryAfter(response.headers.get('retry-after')) ?? undefined,
      });
    }
    if (response.status >= 500) {
      await response.body?.cancel();
      throw new StoreRetryableError(`the App Store Server API answered ${response.status} (${what})`, { reason: 'unavailable' });
    }
    if (response.status === 401) {
      await response.body?.cancel();
      throw new ImportFatalError(
        `the App Store Server API refused the In-App Purchase key of application ${this.appId} (401): check its issuer id, key id and .p8 file in APPLE_API_KEYS`,
      );
    }
    // The library reads status, ok and json() only, which the platform's Response has as node-fetch's does.
    return response as unknown as LibraryResponse;
  }
}
