// The receipt validator protocol of cordova-plugin-purchase 13.x (j3k0/cordova-plugin-purchase,
// src/ts/validator/validator-request.ts, validator-response.ts, verified-receipt.ts, error-codes.ts),
// onto POST /v2/purchases and back. docs/purchases.md, "cordova-plugin-purchase".
import { accessEnd } from '../../customers/customer-summary.js';
import { AppError, ErrorCode, InvalidParameterError } from '../../common/errors.js';
import type { TransactionView } from '../../transactions/transaction.schema.js';
import { parsePurchaseBody, type PurchaseRequest } from '../record-purchase/purchase-body.js';
import type { RecordedPurchase } from '../record-purchase/record-purchase.handler.js';

/** The plugin's ErrorCode values a validator answers with (error-codes.ts: ERROR_CODES_BASE 6777000 + n). */
export const VALIDATOR_ERROR = {
  CLIENT_INVALID: 6777005,
  PAYMENT_INVALID: 6777007,
  UNKNOWN: 6777010,
  COMMUNICATION: 6777014,
  MISSING_TOKEN: 6777016,
  VERIFICATION_FAILED: 6777017,
} as const;

type ValidatorBody = {
  id?: unknown;
  type?: unknown;
  transaction?: { type?: unknown; id?: unknown; appStoreReceipt?: unknown; jwsRepresentation?: unknown; purchaseToken?: unknown; receipt?: unknown };
  additionalData?: { applicationUsername?: unknown };
};

/** What a validator request asks for: the purchase, and what the answer must echo (`data.id`, the transaction's type). */
export type ValidatorRequest = { purchase: PurchaseRequest; id: string; transactionType: string };

/** A plugin product type that Google sells through products.get rather than subscriptionsv2.get. */
const ONE_TIME_TYPES = new Set(['consumable', 'non consumable', 'non renewing subscription']);

/**
 * A validator request body as the plugin builds it (Validator.buildRequestBody over the adapter's
 * receiptValidationBody) onto the purchase it carries: `apple-sk2` (StoreKit 2, jwsRepresentation),
 * `ios-appstore` (StoreKit 1, appStoreReceipt), `android-playstore` (purchaseToken, and the product id
 * from Play's purchase JSON for a one-time product). The user is additionalData.applicationUsername.
 * Fields the plugin adds for other purposes (products, offers, device, prices) are ignored.
 */
export function parseValidatorBody(body: unknown): ValidatorRequest {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new InvalidParameterError('body', 'the body must be a validator request object');
  const b = body as ValidatorBody;
  const t = b.transaction;
  if (!t || typeof t !== 'object') throw new InvalidParameterError('transaction', 'transaction is required: the native transaction to validate');
  const username = b.additionalData?.applicationUsername;
  const applicationUsername = typeof username === 'number' ? String(username) : typeof username === 'string' && username !== '' ? username : undefined;
  const fields: Record<string, unknown> = applicationUsername !== undefined ? { applicationUsername } : {};
  let transactionType: string;
  switch (t.type) {
    case 'apple-sk2':
      transactionType = 'apple-sk2';
      fields.signedTransaction = t.jwsRepresentation;
      break;
    case 'ios-appstore':
      transactionType = 'ios-appstore';
      fields.appReceipt = t.appStoreReceipt;
      break;
    case 'android-playstore': {
      transactionType = 'android-playstore';
      fields.purchaseToken = t.purchaseToken;
      if (typeof b.type === 'string' && ONE_TIME_TYPES.has(b.type)) fields.productId = playProductId(t.receipt, b.id);
      break;
    }
    default:
      throw new InvalidParameterError(
        'transaction.type',
        `transaction.type must be apple-sk2, ios-appstore or android-playstore (got ${JSON.stringify(String(t.type)).slice(0, 60)})`,
      );
  }
  const missing = Object.entries(fields).find(([, v]) => v === undefined);
  if (missing) throw new InvalidParameterError(missing[0], `the ${transactionType} transaction carries no ${VALIDATOR_FIELD[missing[0]] ?? missing[0]}`);
  const purchase = parsePurchaseBody(fields);
  return { purchase, id: typeof b.id === 'string' ? b.id : transactionType, transactionType };
}

const VALIDATOR_FIELD: Record<string, string> = { signedTransaction: 'jwsRepresentation', appReceipt: 'appStoreReceipt', purchaseToken: 'purchaseToken' };

/** Play's purchase JSON (Purchase.getOriginalJson()) names the product; the body's own id is the fallback. */
function playProductId(receipt: unknown, fallback: unknown): string | undefined {
  if (typeof receipt === 'string') {
    try {
      const productId = (JSON.parse(receipt) as { productId?: unknown }).productId;
      if (typeof productId === 'string') return productId;
    } catch {
      // not JSON: the body's id below
    }
  }
  return typeof fallback === 'string' ? fallback : undefined;
}

/** The plugin's VerifiedPurchase: dates in epoch milliseconds. */
export type VerifiedPurchase = {
  id: string;
  platform: string;
  purchaseId: string;
  transactionId: string;
  purchaseDate?: number;
  expiryDate?: number;
  isExpired: boolean;
  isAcknowledged?: boolean;
  isConsumed?: boolean;
  renewalIntent?: string;
  renewalIntentChangeDate?: number;
  cancelationReason?: string;
  isBillingRetryPeriod?: boolean;
  isTrialPeriod?: boolean;
  isIntroPeriod?: boolean;
  discountId?: string;
  priceConsentStatus?: string;
  lastRenewalDate?: number;
  quantity?: number;
};

export type ValidatorAnswer =
  | { ok: true; data: { id: string; latest_receipt: true; transaction: { type: string }; collection: VerifiedPurchase[]; date: string } }
  | { ok: false; status: number; code: number; message: string; data: { latest_receipt: true } };

const ms = (d: Date | undefined) => (d === undefined ? undefined : new Date(d).getTime());
/** The store's ids without this service's platform prefix: the plugin compares them with the device's. */
const storeId = (id: string) => id.replace(/^(apple|google):/, '');
const iso = (d: Date | undefined) => (d === undefined ? null : new Date(d).toISOString());

/**
 * The plugin's success payload: one VerifiedPurchase per purchase (the plugin keeps, per product, the
 * one with the latest purchaseDate), from its latest transaction. expiryDate is the access end of
 * docs/api.md (accessEnd: cut short by a revocation or a replacement, lengthened by a grace
 * period); isExpired is that end reached at `now`, the instant of the answer.
 */
export function validatorSuccess(request: ValidatorRequest, transactions: readonly TransactionView[], now: Date): ValidatorAnswer {
  const latest = new Map<string, TransactionView>();
  const charged = (t: TransactionView) => ms(t.lastRenewalDate ?? t.renewalDate ?? t.purchaseDate) ?? 0;
  for (const t of transactions) {
    const known = latest.get(t.purchaseId);
    if (!known || charged(t) > charged(known) || (charged(t) === charged(known) && t.transactionId > known.transactionId)) latest.set(t.purchaseId, t);
  }
  const platform = request.transactionType === 'android-playstore' ? 'android-playstore' : 'ios-appstore';
  const collection = [...latest.values()].map((t): VerifiedPurchase => {
    const end = endOfAccess(t);
    return drop({
      id: storeId(t.productId),
      platform,
      purchaseId: storeId(t.purchaseId),
      transactionId: storeId(t.transactionId),
      purchaseDate: ms(t.purchaseDate),
      expiryDate: end,
      isExpired: end !== undefined ? end <= now.getTime() : t.revocationDate !== undefined,
      isAcknowledged: t.isAcknowledged,
      isConsumed: t.isConsumed,
      renewalIntent: t.renewalIntent,
      renewalIntentChangeDate: ms(t.renewalIntentChangeDate),
      cancelationReason: t.cancelationReason,
      isBillingRetryPeriod: t.isBillingRetryPeriod,
      isTrialPeriod: t.isTrialPeriod,
      isIntroPeriod: t.isIntroPeriod,
      discountId: t.discountId,
      // The plugin's PriceConsentStatus says Agreed where the contract says Accepted.
      priceConsentStatus: t.priceConsentStatus === 'Accepted' ? 'Agreed' : t.priceConsentStatus,
      lastRenewalDate: ms(t.lastRenewalDate),
      quantity: t.quantity,
    });
  });
  return { ok: true, data: { id: request.id, latest_receipt: true, transaction: { type: request.transactionType }, collection, date: now.toISOString() } };
}

/** docs/api.md's access end of one transaction (customer-summary.ts), on what GET /v2/transactions shows of it. */
function endOfAccess(t: TransactionView): number | undefined {
  const end = accessEnd({
    transactionId: t.transactionId,
    receiptId: t.receiptId,
    purchaseId: t.purchaseId,
    productId: t.productId,
    transactionDate: iso(t.lastRenewalDate ?? t.renewalDate ?? t.purchaseDate) ?? '',
    // Only read for a store-expired snapshot without a revocation: its expiration then stands.
    snapshotTime: iso(t.expirationDate) ?? '',
    expirationDate: iso(t.expirationDate),
    gracePeriodExpirationDate: iso(t.gracePeriodExpirationDate),
    revocationDate: iso(t.revocationDate),
    isPending: t.isPending ?? null,
    isUpgraded: t.isUpgraded ?? null,
    isExpired: t.isExpired ?? null,
    isBillingRetryPeriod: t.isBillingRetryPeriod ?? null,
    cancelationReason: t.cancelationReason ?? null,
    lastRenewalDate: iso(t.lastRenewalDate),
    renewalIntent: t.renewalIntent ?? null,
  });
  return end === null ? undefined : Date.parse(end);
}

const drop = <T extends object>(o: T): T => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;

/** Why POST /v2/purchases refused, as the plugin's error payload. The plugin reads a body only when the status is 200. */
export function validatorFailure(error: AppError, status: number): ValidatorAnswer {
  return { ok: false, status, code: VALIDATOR_CODE[error.code] ?? VALIDATOR_ERROR.UNKNOWN, message: error.message, data: { latest_receipt: true } };
}

/** An answer that is no verdict yet: in the log, not yet shown by the read models. */
export function validatorPending(recorded: Extract<RecordedPurchase, { status: 'pending' }>): ValidatorAnswer {
  return {
    ok: false,
    status: 202,
    code: VALIDATOR_ERROR.COMMUNICATION,
    message: `the purchase is recorded but not shown yet; validate again shortly (${recorded.location})`,
    data: { latest_receipt: true },
  };
}

const VALIDATOR_CODE: Partial<Record<ErrorCode, number>> = {
  [ErrorCode.InvalidParameter]: VALIDATOR_ERROR.MISSING_TOKEN,
  [ErrorCode.PurchaseUnverified]: VALIDATOR_ERROR.VERIFICATION_FAILED,
  [ErrorCode.PurchaseUnknown]: VALIDATOR_ERROR.VERIFICATION_FAILED,
  [ErrorCode.ReceiptOwnedByAnotherUser]: VALIDATOR_ERROR.PAYMENT_INVALID,
  [ErrorCode.UsernameNotAllowed]: VALIDATOR_ERROR.CLIENT_INVALID,
  [ErrorCode.StoreAccessNotConfigured]: VALIDATOR_ERROR.UNKNOWN,
  [ErrorCode.StoreApiUnavailable]: VALIDATOR_ERROR.COMMUNICATION,
  [ErrorCode.EventLogUnavailable]: VALIDATOR_ERROR.COMMUNICATION,
};
