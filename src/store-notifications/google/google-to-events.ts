// Google Play Real-time Developer Notifications onto the event contract (docs/events/google.md).
// Pure: the endpoint verifies the push and fetches the purchase state; this maps it.
import type { androidpublisher_v3 } from '@googleapis/androidpublisher';
import { revokedSnapshot } from '../stored-transaction.js';
import type { ContractEvent } from '../apple/apple-to-events.js';

type SubscriptionV2 = androidpublisher_v3.Schema$SubscriptionPurchaseV2;
type ProductPurchase = androidpublisher_v3.Schema$ProductPurchase;
type Money = androidpublisher_v3.Schema$Money;

/** The RTDN inside a Pub/Sub message's data. */
export type DeveloperNotification = {
  version?: string;
  packageName?: string;
  eventTimeMillis?: string;
  subscriptionNotification?: { notificationType?: number; purchaseToken?: string; subscriptionId?: string };
  oneTimeProductNotification?: { notificationType?: number; purchaseToken?: string; sku?: string };
  voidedPurchaseNotification?: { purchaseToken?: string; orderId?: string; productType?: number; refundType?: number };
  testNotification?: { version?: string };
};

const SOURCE = 'google-play-rtdn';
const micros = (m: Money | undefined) =>
  m?.units === undefined || m.units === null ? undefined : Number(BigInt(m.units) * 1_000_000n + BigInt(Math.trunc((m.nanos ?? 0) / 1000)));
const dropUndefined = <T extends Record<string, unknown>>(o: T) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null)) as T;
const iso = (t: string | null | undefined) => (t ? new Date(t).toISOString() : undefined);
/**
 * Google numbers a subscription's charges "GPA.1234-5678-9012-34567" (the first order), then
 * "GPA.1234-5678-9012-34567..0" (the first renewal), "..1" (the second), ...: any "..N" suffix is a
 * renewal, N + 1 periods after the first order ("Subscription order numbers", Play Billing docs).
 */
const RENEWAL_ORDER = /^(.*)\.\.(\d+)$/;

function event(id: string, appId: string, time: Date, type: ContractEvent['type'], data: ContractEvent['data']): ContractEvent {
  return { specversion: '1.0', id, source: SOURCE, type, time: time.toISOString(), appid: appId, datacontenttype: 'application/json', data };
}

const CANCELATION: [keyof androidpublisher_v3.Schema$CanceledStateContext, string][] = [
  ['replacementCancellation', 'System.Replaced'],
  ['userInitiatedCancellation', 'Customer'],
  ['systemInitiatedCancellation', 'System'],
  ['developerInitiatedCancellation', 'Developer'],
];

/**
 * A subscription's current state as transaction.updated for its latest order (each renewal is an
 * order of its own), plus receipt.linked when the purchase names the account. `fetchedAt` is the
 * event time: a later fetch is a newer snapshot, whatever order the notifications came in.
 */
export function googleSubscriptionEvents(appId: string, messageId: string, purchaseToken: string, s: SubscriptionV2, fetchedAt: Date): ContractEvent[] {
  const item = s.lineItems?.[0];
  const orderId = item?.latestSuccessfulOrderId;
  if (!item?.productId || !orderId) return [];
  const renewal = RENEWAL_ORDER.exec(orderId);
  const state = s.subscriptionState ?? '';
  const receiptId = `google:${purchaseToken}`;
  const user = s.externalAccountIdentifiers?.obfuscatedExternalAccountId ?? undefined;
  const canceled = CANCELATION.find(([k]) => s.canceledStateContext?.[k] !== undefined && s.canceledStateContext?.[k] !== null)?.[1];
  const plan = item.autoRenewingPlan;
  const priceChange = plan?.priceChangeDetails?.priceChangeState;
  const data = dropUndefined({
    transactionId: `google:${orderId}`,
    purchaseId: `google:${renewal ? renewal[1] : orderId}`,
    productId: `google:${item.productId}`,
    platform: 'google',
    receiptId,
    applicationUsername: user,
    sandbox: s.testPurchase !== undefined && s.testPurchase !== null,
    // Google gives no charge time per renewal: a renewal order ("..0" included) carries no date and
    // is filed at the first fetch of it, seconds after the charge (the RTDN that announced it); only
    // the first order is dated, at the subscription's start.
    purchaseDate: renewal ? undefined : iso(s.startTime),
    expirationDate: iso(item.expiryTime),
    renewalIntent: plan ? (plan.autoRenewEnabled ? 'Renew' : 'Lapse') : undefined,
    cancelationReason: canceled,
    isPending: state === 'SUBSCRIPTION_STATE_PENDING' || state === 'SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED' ? true : undefined,
    isAcknowledged: s.acknowledgementState ? s.acknowledgementState === 'ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED' : undefined,
    isBillingRetryPeriod: state === 'SUBSCRIPTION_STATE_IN_GRACE_PERIOD' || state === 'SUBSCRIPTION_STATE_ON_HOLD' ? true : undefined,
    // In grace the line item's expiry is the end of the grace period: access lasts until then.
    gracePeriodExpirationDate: state === 'SUBSCRIPTION_STATE_IN_GRACE_PERIOD' ? iso(item.expiryTime) : undefined,
    // On hold, paused and expired subscriptions give no access, whatever the expiry says.
    isExpired: [
      'SUBSCRIPTION_STATE_ON_HOLD',
      'SUBSCRIPTION_STATE_PAUSED',
      'SUBSCRIPTION_STATE_EXPIRED',
      'SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED',
    ].includes(state)
      ? true
      : undefined,
    isTrialPeriod: item.offerPhase ? item.offerPhase.freeTrial !== undefined && item.offerPhase.freeTrial !== null : undefined,
    isIntroPeriod: item.offerPhase ? item.offerPhase.introductoryPrice !== undefined && item.offerPhase.introductoryPrice !== null : undefined,
    discountId: item.offerDetails?.offerId ?? undefined,
    priceConsentStatus: priceChange === 'OUTSTANDING' ? 'Notified' : priceChange === 'CONFIRMED' || priceChange === 'APPLIED' ? 'Accepted' : undefined,
    amountMicros: micros(plan?.recurringPrice),
    currency: plan?.recurringPrice?.currencyCode ?? undefined,
  });
  const events = [event(`${messageId}:${orderId}`, appId, fetchedAt, 'transaction.updated', data)];
  if (user) events.push(event(`${messageId}:link`, appId, fetchedAt, 'receipt.linked', { receiptId, applicationUsername: user }));
  return events;
}

/**
 * The purchase a new one replaced (linkedPurchaseToken: upgrade, downgrade, resubscribe): its latest
 * order marked isUpgraded, from its own fetched state.
 */
export function googleReplacedEvents(appId: string, messageId: string, replacedToken: string, replaced: SubscriptionV2, fetchedAt: Date): ContractEvent[] {
  return googleSubscriptionEvents(appId, `${messageId}:replaced`, replacedToken, replaced, fetchedAt)
    .filter((e) => e.type === 'transaction.updated')
    .map((e) => ({ ...e, data: { ...e.data, isUpgraded: true, cancelationReason: 'System.Replaced' } }));
}

/** A one-time product (purchases.products.get): no expiry, never a subscriber. */
export function googleProductEvents(
  appId: string,
  messageId: string,
  purchaseToken: string,
  sku: string,
  p: ProductPurchase,
  fetchedAt: Date,
): ContractEvent[] {
  if (!p.orderId) return [];
  const receiptId = `google:${purchaseToken}`;
  const user = p.obfuscatedExternalAccountId ?? undefined;
  const data = dropUndefined({
    transactionId: `google:${p.orderId}`,
    purchaseId: `google:${p.orderId}`,
    productId: `google:${sku}`,
    platform: 'google',
    receiptId,
    applicationUsername: user,
    sandbox: p.purchaseType === 0,
    purchaseDate: p.purchaseTimeMillis ? new Date(Number(p.purchaseTimeMillis)).toISOString() : undefined,
    isPending: p.purchaseState === 2 ? true : undefined,
    isExpired: p.purchaseState === 1 ? true : undefined,
    cancelationReason: p.purchaseState === 1 ? 'Customer' : undefined,
    isConsumed: p.consumptionState === undefined || p.consumptionState === null ? undefined : p.consumptionState === 1,
    isAcknowledged: p.acknowledgementState === undefined || p.acknowledgementState === null ? undefined : p.acknowledgementState === 1,
    quantity: p.quantity ?? undefined,
  });
  const events = [event(`${messageId}:${p.orderId}`, appId, fetchedAt, 'transaction.updated', data)];
  if (user) events.push(event(`${messageId}:link`, appId, fetchedAt, 'receipt.linked', { receiptId, applicationUsername: user }));
  return events;
}

/** voidedPurchaseNotification.refundType (RTDN reference): 1 the whole purchase, 2 some of its quantity. */
export const GOOGLE_REFUND_FULL = 1;
export const GOOGLE_REFUND_QUANTITY_BASED_PARTIAL = 2;

/**
 * Whether a voided purchase notification revokes the order. A quantity-based partial refund
 * (refundType 2, one-time products bought in several units) does not say how many units: the
 * notification is acknowledged, and voidedpurchases.list (the poller, `import google-voided`)
 * records it with its voidedQuantity. A missing refundType is read as a whole refund
 * (notifications sent before Google added the field were always whole).
 */
export const voidedRevokesOrder = (v: NonNullable<DeveloperNotification['voidedPurchaseNotification']>) =>
  v.refundType !== GOOGLE_REFUND_QUANTITY_BASED_PARTIAL;

/** What a void gave back of an order, in the contract's words (Apple's revocationType values). */
export type GoogleRefund = { revocationType: 'REFUND_FULL' | 'REFUND_PRORATED'; refundedShare?: number };

const isCount = (n: unknown): n is number => typeof n === 'number' && Number.isInteger(n) && n >= 1;

/**
 * What one void refunds of the order the read models hold. Without voidedQuantity the whole order
 * (REFUND_FULL). With one (voidedpurchases.list, quantity-based partial refunds of a one-time
 * product bought in several units): the units refunded so far, those of earlier partial refunds of
 * the order included, over the quantity bought (REFUND_PRORATED), or REFUND_FULL once that is all
 * of them. A stored order without quantity was bought once ("if not present, the quantity is 1",
 * ProductPurchase.quantity): any void refunds all of it.
 */
export function googleVoidRefund(voidedQuantity: number | null | undefined, stored: Record<string, unknown>): GoogleRefund | { skip: string } {
  if (voidedQuantity === undefined || voidedQuantity === null) return { revocationType: 'REFUND_FULL' };
  if (!isCount(voidedQuantity)) return { skip: `voidedQuantity ${JSON.stringify(voidedQuantity)} is not a count of units` };
  const quantity = isCount(stored.quantity) ? stored.quantity : 1;
  const before = stored.revocationType === 'REFUND_PRORATED' && typeof stored.refundedShare === 'number' ? Math.round(stored.refundedShare * quantity) : 0;
  const units = before + voidedQuantity;
  return units >= quantity ? { revocationType: 'REFUND_FULL' } : { revocationType: 'REFUND_PRORATED', refundedShare: units / quantity };
}

/**
 * An order the read models show wholly revoked: a further void has nothing left to refund. One
 * revoked by a partial refund (REFUND_PRORATED) may have more of its units refunded later.
 */
export const revokedWhole = (stored: Record<string, unknown>) => Boolean(stored.revocationDate) && stored.revocationType !== 'REFUND_PRORATED';

/**
 * A voided purchase (refund or chargeback): the stored transaction of that order, revoked at the
 * notification's time, with what the void gave back. Google's notification names only the order,
 * so the rest of the row comes from what the read models already hold (the snapshot must be
 * whole: the newest one wins).
 */
export function googleVoidedEvents(
  appId: string,
  messageId: string,
  stored: Record<string, unknown>,
  voidedAt: Date,
  fetchedAt: Date,
  refund: GoogleRefund,
): ContractEvent[] {
  // The stored share was an earlier partial refund's: this void's replaces it (absent: all of it).
  const { refundedShare: _earlier, ...revoked } = revokedSnapshot(stored, voidedAt);
  const data = { ...revoked, ...refund } as ContractEvent['data'];
  return [event(`${messageId}:voided`, appId, fetchedAt, 'transaction.updated', data)];
}
