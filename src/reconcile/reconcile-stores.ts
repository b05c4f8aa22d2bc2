// The store API clients a pass asks through: the import's own (src/import/), counting each call by
// outcome for subscription_records_store_api_calls_total.
import type { Response as LibraryResponse } from 'node-fetch';
import type { AppConfig } from '../config/app-config.js';
import { AppleApiClient } from '../import/apple/apple-api-client.js';
import { classifyGoogleCall } from '../import/google/google-import.js';
import { StoreRetryableError } from '../import/import-errors.js';
import { appleVerifierFor, type AppleVerifier } from '../store-notifications/apple/apple-verifier.js';
import { GooglePlayApi } from '../store-notifications/google/google-play.js';

export type StoreName = 'apple' | 'google';
/** ok: answered; rate_limited: 429; error: anything else that is no answer (5xx, network, 4xx). */
export type CallOutcome = 'ok' | 'rate_limited' | 'error';
export type CountCall = (store: StoreName, outcome: CallOutcome) => void;

export type ReconcileStores = {
  apple?: { client: AppleApiClient; verifier: AppleVerifier };
  google?: { api: GooglePlayApi; packageName: string };
};

class CountingAppleApiClient extends AppleApiClient {
  count: CountCall = () => undefined;

  protected override async makeFetchRequest(
    path: string,
    query: URLSearchParams,
    method: string,
    body: string | Buffer | undefined,
    headers: { [key: string]: string },
  ): Promise<LibraryResponse> {
    try {
      const response = await super.makeFetchRequest(path, query, method, body, headers);
      this.count('apple', response.ok ? 'ok' : 'error');
      return response;
    } catch (error) {
      this.count('apple', error instanceof StoreRetryableError && error.reason === 'rate-limited' ? 'rate_limited' : 'error');
      throw error;
    }
  }
}

class CountingGooglePlayApi extends GooglePlayApi {
  count: CountCall = () => undefined;

  private async counted<T>(run: () => Promise<T>): Promise<T> {
    try {
      const value = await run();
      this.count('google', 'ok');
      return value;
    } catch (error) {
      this.count('google', classifyGoogleCall(error).kind === 'rate-limited' ? 'rate_limited' : 'error');
      throw error;
    }
  }

  override subscription(packageName: string, token: string) {
    return this.counted(() => super.subscription(packageName, token));
  }

  override product(packageName: string, productId: string, token: string) {
    return this.counted(() => super.product(packageName, productId, token));
  }

  override voidedPurchases(packageName: string, page: { startTime?: number; token?: string; maxResults?: number }) {
    return this.counted(() => super.voidedPurchases(packageName, page));
  }
}

/** The clients of `appId` for every store it has API credentials for (Apple: APPLE_APPS with APPLE_API_KEYS; Google: GOOGLE_APPS). */
export function reconcileStores(config: AppConfig, appId: string, count: CountCall = () => undefined): ReconcileStores {
  const stores: ReconcileStores = {};
  const apple = config.apple;
  const appleApp = apple?.apps.get(appId);
  const key = apple?.apiKeys.get(appId);
  if (apple && appleApp && key) {
    const client = new CountingAppleApiClient(appId, key, appleApp, apple.apiBaseUrl);
    client.count = count;
    stores.apple = { client, verifier: appleVerifierFor(apple.rootCertificates, appleApp, () => Date.now()) };
  }
  const google = config.google;
  const googleApp = google?.apps.get(appId);
  if (google && googleApp) {
    const api = new CountingGooglePlayApi(google);
    api.count = count;
    stores.google = { api, packageName: googleApp.packageName };
  }
  return stores;
}

/** Every application a scheduled pass covers: those with store API credentials. */
export function reconcilableApps(config: AppConfig): string[] {
  const apps = new Set<string>();
  for (const appId of config.apple?.apps.keys() ?? []) if (config.apple?.apiKeys.has(appId)) apps.add(appId);
  for (const appId of config.google?.apps.keys() ?? []) apps.add(appId);
  return [...apps].sort();
}
