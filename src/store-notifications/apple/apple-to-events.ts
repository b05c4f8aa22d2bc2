// App Store Server Notifications V2, decoded and verified, onto the event contract
// (docs/events/apple.md has the table). Pure: the endpoint verifies, this maps, the log carries it.

/** The fields of Apple's decoded notification this mapping reads (ResponseBodyV2DecodedPayload). */
export type AppleNotification = {
  notificationType?: string;
  subtype?: string;
  notificationUUID?: string;
  signedDate?: number;
  data?: { environment?: string; bundleId?: string; signedTransactionInfo?: string; signedRenewalInfo?: string; status?: number };
};

/** JWSTransactionDecodedPayload, the fields mapped. Dates are epoch milliseconds. */
export type AppleTransaction = {
  transactionId?: string;
  originalTransactionId?: string;
  productId?: string;
  purchaseDate?: number;
  originalPurchaseDate?: number;
  expiresDate?: number;
  quantity?: number;
  type?: string;
  appAccountToken?: string;
  revocationDate?: number;
  revocationReason?: number;
  /** REFUND_FULL, REFUND_PRORATED or FAMILY_REVOKE (App Store Server API 1.19). */
  revocationType?: string;
  /** The share refunded or revoked, in milliunits of a percent: 50000 is 50% (API 1.19). */
  revocationPercentage?: number;
  isUpgraded?: boolean;
  offerType?: number;
  offerIdentifier?: string;
  offerDiscountType?: string;
  /** ISO 8601 duration of the offer (App Store Server API 1.15). */
  offerPeriod?: string;
  /** PURCHASED or FAMILY_SHARED. */
  inAppOwnershipType?: string;
  environment?: string;
  price?: number;
  currency?: string;
  transactionReason?: string;
};

/** JWSRenewalInfoDecodedPayload, the fields mapped. */
export type AppleRenewalInfo = {
  autoRenewStatus?: number;
  isInBillingRetryPeriod?: boolean;
  gracePeriodExpiresDate?: number;
  priceIncreaseStatus?: number;
  expirationIntent?: number;
  originalTransactionId?: string;
};

/**
 * Notification types that carry no transaction state (or, CONSUMPTION_REQUEST, a transaction whose
 * state did not change): acknowledged and counted, not published.
 */
export const APPLE_TYPES_WITHOUT_TRANSACTION = new Set([
  'TEST',
  'CONSUMPTION_REQUEST',
  'RENEWAL_EXTENSION',
  'EXTERNAL_PURCHASE_TOKEN',
  'METADATA_UPDATE',
  'MIGRATION',
  'RESCIND_CONSENT',
]);

/** Whose access ended early, by Apple's revocationReason (0: other, 1: an issue in the app). */
const REVOCATION_REASON: Record<number, string> = { 0: 'Customer', 1: 'Developer' };
const PRICE_CONSENT: Record<number, string> = { 0: 'Notified', 1: 'Accepted' };
/** Apple's offerType (1 introductory, 2 promotional, 3 offer code, 4 win-back) by the contract's name. */
export const APPLE_OFFER_TYPE: Record<number, string> = { 1: 'INTRODUCTORY', 2: 'PROMOTIONAL', 3: 'OFFER_CODE', 4: 'WIN_BACK' };
/**
 * Apple's enumerated strings (inAppOwnershipType, offerDiscountType) and offerPeriod are carried as
 * Apple spells them when they look like one: a value Apple adds later passes, but nothing that the
 * contract would refuse (422, and Apple would stop retrying a notification that carries it).
 */
const appleWord = (v: string | undefined) => (v !== undefined && /^[A-Z][A-Z0-9_]{0,63}$/.test(v) ? v : undefined);
const isoDuration = (v: string | undefined) => (v !== undefined && /^P[0-9YMWDTHS.]{2,63}$/.test(v) ? v : undefined);

/** revocationPercentage's 100%: Apple counts the percentage in milliunits (67.932% is 67932). */
const WHOLE_PERCENTAGE = 100_000;
/**
 * The share refunded, 0 to 1, from Apple's revocationPercentage. A value that is no percentage (not
 * an integer from 0 to 100000) is Apple's mistake, not a reason to refuse the notification: the
 * share is left out, the revocation and its type still pass.
 */
export const appleRefundedShare = (percentage: number | undefined) =>
  percentage !== undefined && Number.isInteger(percentage) && percentage >= 0 && percentage <= WHOLE_PERCENTAGE ? percentage / WHOLE_PERCENTAGE : undefined;

const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());
const dropUndefined = <T extends Record<string, unknown>>(o: T) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;

export type ContractEvent = Record<string, unknown> & {
  id: string;
  type: 'transaction.updated' | 'receipt.linked';
  data: Record<string, unknown> & { receiptId: string };
};

/**
 * The events one notification stands for: a transaction.updated with the transaction's state as of
 * the notification's signedDate, and a receipt.linked when appAccountToken names the user. None
 * for notifications that carry no transaction. Only the transaction carried: an upgrade
 * (DID_CHANGE_RENEWAL_PREF UPGRADE) carries the new one, and the one it replaced is found by the
 * projection (docs/api.md, rule 2), which sees the subscription's other transactions.
 */
export function appleToEvents(appId: string, n: AppleNotification, t: AppleTransaction | undefined, r: AppleRenewalInfo | undefined): ContractEvent[] {
  if (!t || !n.notificationUUID || n.signedDate === undefined || !t.transactionId || !t.productId) return [];
  if (APPLE_TYPES_WITHOUT_TRANSACTION.has(n.notificationType ?? '')) return [];
  const original = t.originalTransactionId ?? t.transactionId;
  const receiptId = `apple:${original}`;
  const time = new Date(n.signedDate).toISOString();
  const renewal = t.transactionId !== original;
  const subscription = t.expiresDate !== undefined;
  const type = n.notificationType ?? '';
  const ended = type === 'EXPIRED' || type === 'GRACE_PERIOD_EXPIRED';
  const upgraded = t.isUpgraded === true;
  const trial = t.offerDiscountType === 'FREE_TRIAL';
  // A refund's kind and share describe its revocation: without a revocationDate (REFUND_REVERSED
  // sends the transaction without one) there is nothing they could describe.
  const revoked = t.revocationDate !== undefined;
  const data = dropUndefined({
    transactionId: `apple:${t.transactionId}`,
    purchaseId: `apple:${original}`,
    productId: `apple:${t.productId}`,
    platform: 'apple',
    receiptId,
    applicationUsername: t.appAccountToken,
    sandbox: (t.environment ?? n.data?.environment) !== 'Production',
    purchaseDate: iso(t.originalPurchaseDate ?? t.purchaseDate),
    // A renewal (or a resubscription) is charged at its own purchaseDate: the transaction date.
    lastRenewalDate: renewal ? iso(t.purchaseDate) : undefined,
    expirationDate: iso(t.expiresDate),
    renewalIntent: subscription && r?.autoRenewStatus !== undefined ? (r.autoRenewStatus === 1 ? 'Renew' : 'Lapse') : undefined,
    renewalIntentChangeDate: type === 'DID_CHANGE_RENEWAL_STATUS' ? time : undefined,
    cancelationReason: upgraded ? 'System.Replaced' : t.revocationDate !== undefined ? (REVOCATION_REASON[t.revocationReason ?? 0] ?? 'Customer') : undefined,
    isBillingRetryPeriod: subscription ? (r?.isInBillingRetryPeriod ?? undefined) : undefined,
    gracePeriodExpirationDate: r?.isInBillingRetryPeriod ? iso(r.gracePeriodExpiresDate) : undefined,
    isTrialPeriod: t.offerType !== undefined ? trial : undefined,
    isIntroPeriod: t.offerType !== undefined ? t.offerType === 1 && !trial : undefined,
    isExpired: ended || t.revocationDate !== undefined ? true : undefined,
    revocationDate: iso(t.revocationDate),
    revocationType: revoked ? appleWord(t.revocationType) : undefined,
    refundedShare: revoked ? appleRefundedShare(t.revocationPercentage) : undefined,
    isUpgraded: upgraded ? true : undefined,
    priceConsentStatus: r?.priceIncreaseStatus !== undefined ? PRICE_CONSENT[r.priceIncreaseStatus] : undefined,
    discountId: t.offerIdentifier,
    offerType: t.offerType !== undefined ? APPLE_OFFER_TYPE[t.offerType] : undefined,
    offerDiscountType: appleWord(t.offerDiscountType),
    offerPeriod: isoDuration(t.offerPeriod),
    // Family Sharing: a family member's access is access (docs/api.md); the row says which it is.
    ownershipType: appleWord(t.inAppOwnershipType),
    quantity: t.quantity,
    // Apple's price is in milliunits of the currency; the contract's amountMicros in millionths.
    amountMicros: t.price !== undefined ? t.price * 1000 : undefined,
    currency: t.currency,
  });
  const events: ContractEvent[] = [
    {
      specversion: '1.0',
      id: n.notificationUUID,
      source: 'apple-app-store-server-notifications',
      type: 'transaction.updated',
      time,
      appid: appId,
      datacontenttype: 'application/json',
      data,
    },
  ];
  if (t.appAccountToken) {
    events.push({
      specversion: '1.0',
      id: `${n.notificationUUID}:link`,
      source: 'apple-app-store-server-notifications',
      type: 'receipt.linked',
      time,
      appid: appId,
      datacontenttype: 'application/json',
      data: { receiptId, applicationUsername: t.appAccountToken },
    });
  }
  return events;
}
