import { ReceiptUtility, VerificationException, VerificationStatus } from '@apple/app-store-server-library';
import { ErrorCode } from '../../common/errors.js';
import type { AppConfig } from '../../config/app-config.js';
import { AppleApiClient } from '../../import/apple/apple-api-client.js';
import { appleTransactionEvents } from '../../import/apple/apple-transaction-import.js';
import { importGooglePurchase } from '../../import/google/google-import.js';
import { ImportFatalError, LineError, StoreRetryableError } from '../../import/import-errors.js';
import type { LineResult } from '../../import/import-runner.js';
import { appleToEvents, type AppleTransaction, type ContractEvent } from '../../store-notifications/apple/apple-to-events.js';
import { appleVerifierFor, type AppleVerifier } from '../../store-notifications/apple/apple-verifier.js';
import { GooglePlayApi } from '../../store-notifications/google/google-play.js';
import { mapDates, refuseUnstorableDates } from '../../store-notifications/store-dates.js';
import { PurchaseError } from '../purchase.errors.js';
import { fromSource, SOURCES } from '../../events/provenance.js';
import type { PurchaseSource } from './purchase-body.js';

/**
 * Where a purchase's events come from: Apple's signed transaction verified here, or the store's own
 * answer through the import's code (one mapping per store, the notification endpoints'). The
 * verifiers and API clients are made once per app.
 */
export class PurchaseSources {
  private readonly verifiers = new Map<string, AppleVerifier>();
  private readonly appleClients = new Map<string, AppleApiClient>();
  private googleApi: GooglePlayApi | undefined;

  constructor(
    private readonly config: AppConfig,
    private readonly now: () => Date,
  ) {}

  /** The events the purchase stands for, each as the store's own path would publish it. */
  async events(appId: string, source: PurchaseSource): Promise<ContractEvent[]> {
    return fromSource(await this.storeEvents(appId, source), SOURCES.appPurchases);
  }

  private async storeEvents(appId: string, source: PurchaseSource): Promise<ContractEvent[]> {
    if (source.platform === 'google') return this.google(appId, source.purchaseToken, source.productId);
    if ('signedTransaction' in source) return this.signedTransaction(appId, source.signedTransaction);
    const transactionId = 'transactionId' in source ? source.transactionId : transactionIdOfReceipt(source.appReceipt);
    return this.appleHistory(appId, transactionId);
  }

  /**
   * The App Store Server API client of the app, which Set App Account Token also uses: undefined
   * when the app has no In-App Purchase key.
   */
  appleClient(appId: string): AppleApiClient | undefined {
    const apple = this.config.apple;
    const app = apple?.apps.get(appId);
    const key = apple?.apiKeys.get(appId);
    if (!apple || !app || !key) return undefined;
    let client = this.appleClients.get(appId);
    if (!client) this.appleClients.set(appId, (client = new AppleApiClient(appId, key, app, apple.apiBaseUrl)));
    return client;
  }

  private verifier(appId: string): AppleVerifier {
    const apple = this.config.apple;
    const app = apple?.apps.get(appId);
    if (!apple || !app)
      throw new PurchaseError(
        ErrorCode.StoreAccessNotConfigured,
        `application ${JSON.stringify(appId)} takes no App Store purchases: add it to APPLE_APPS (with APPLE_ROOT_CERTIFICATES)`,
      );
    let verifier = this.verifiers.get(appId);
    if (!verifier) this.verifiers.set(appId, (verifier = appleVerifierFor(apple.rootCertificates, app, () => this.now().getTime())));
    return verifier;
  }

  /**
   * StoreKit 2's Transaction.jwsRepresentation, verified as a notification's signedTransactionInfo
   * is, mapped as a notification carrying it would be: its state as of its signedDate, with an id
   * made of the transaction and that instant (the same JWS twice is one event).
   */
  private async signedTransaction(appId: string, jws: string): Promise<ContractEvent[]> {
    const verifier = this.verifier(appId);
    let t: AppleTransaction & { signedDate?: number };
    try {
      t = await verifier.verifyAndDecodeTransaction(jws);
    } catch (error) {
      if (!(error instanceof VerificationException)) throw error;
      throw new PurchaseError(
        ErrorCode.PurchaseUnverified,
        `signedTransaction failed verification: ${VerificationStatus[error.status] ?? error.status} (a forged or altered JWS, another app's or environment's, or a chain not leading to APPLE_ROOT_CERTIFICATES)`,
        { cause: error },
      );
    }
    if (t.signedDate === undefined || !t.transactionId || !t.productId)
      throw new PurchaseError(ErrorCode.PurchaseUnverified, 'signedTransaction lacks signedDate, transactionId or productId');
    try {
      refuseUnstorableDates('signedTransaction', t);
    } catch (error) {
      throw new PurchaseError(ErrorCode.PurchaseUnverified, (error as Error).message);
    }
    const notification = {
      notificationUUID: `app-purchase:${t.transactionId}:${t.signedDate}`,
      signedDate: t.signedDate,
      data: { environment: t.environment },
    };
    return mapDates(() => appleToEvents(appId, notification, t, undefined));
  }

  /** Get Transaction History and the subscription statuses, as `import apple` reads them. */
  private async appleHistory(appId: string, transactionId: string): Promise<ContractEvent[]> {
    const verifier = this.verifier(appId);
    const client = this.appleClient(appId);
    if (!client)
      throw new PurchaseError(
        ErrorCode.StoreAccessNotConfigured,
        `a transactionId or appReceipt is looked up with the App Store Server API: application ${appId} has no In-App Purchase key in APPLE_API_KEYS (send signedTransaction instead, or add the key)`,
      );
    return fromStore('App Store', () => appleTransactionEvents(appId, client, verifier, { transactionId }));
  }

  /** subscriptionsv2.get (and the purchases it replaced) or products.get, as `import google` reads them. */
  private async google(appId: string, purchaseToken: string, productId: string | undefined): Promise<ContractEvent[]> {
    const google = this.config.google;
    const app = google?.apps.get(appId);
    if (!google || !app)
      throw new PurchaseError(
        ErrorCode.StoreAccessNotConfigured,
        `application ${JSON.stringify(appId)} takes no Google Play purchases: add it to GOOGLE_APPS (with GOOGLE_SERVICE_ACCOUNT_FILE)`,
      );
    this.googleApi ??= new GooglePlayApi(google);
    const api = this.googleApi;
    return fromStore('Play Developer API', () => importGooglePurchase(api, appId, app.packageName, { purchaseToken, productId }, this.now));
  }
}

/** StoreKit 1's app receipt: Apple's ReceiptUtility reads a transaction id out of it. */
function transactionIdOfReceipt(appReceipt: string): string {
  let id: string | null;
  try {
    id = new ReceiptUtility().extractTransactionIdFromAppReceipt(appReceipt.replace(/\s+/g, ''));
  } catch (error) {
    throw new PurchaseError(ErrorCode.PurchaseUnverified, 'appReceipt is not an App Store receipt (its PKCS #7 container cannot be read)', { cause: error });
  }
  if (!id) throw new PurchaseError(ErrorCode.PurchaseUnknown, 'appReceipt holds no in-app purchase: nothing to record');
  return id;
}

/** The import's verdicts in this endpoint's terms: a skip is a purchase the store does not know, a retry is the store away. */
async function fromStore(store: string, run: () => Promise<LineResult>): Promise<ContractEvent[]> {
  let result: LineResult;
  try {
    result = await run();
  } catch (error) {
    if (error instanceof LineError) throw new PurchaseError(ErrorCode.PurchaseUnverified, error.message);
    if (error instanceof StoreRetryableError)
      throw new PurchaseError(ErrorCode.StoreApiUnavailable, `the ${store} cannot answer now; retry later`, { cause: error });
    if (error instanceof ImportFatalError)
      throw new PurchaseError(ErrorCode.StoreApiUnavailable, `the ${store} refused this service's credentials; the operator must check them`, { cause: error });
    throw error;
  }
  if ('skip' in result) throw new PurchaseError(ErrorCode.PurchaseUnknown, result.skip);
  return result.events as unknown as ContractEvent[];
}
