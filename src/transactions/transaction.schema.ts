import type { Provenance } from '../events/provenance.js';
import { pagingSchema } from '../common/paging.js';

const dateTime = { type: 'string', format: 'date-time' } as const;
const str = { type: 'string' } as const;
const bool = { type: 'boolean' } as const;
const num = { type: 'number' } as const;

/** JSON Schema of one Transaction row: drives fast-json-stringify and the OpenAPI document. */
export const transactionSchema = {
  type: 'object',
  required: ['transactionId', 'purchaseId', 'productId', 'platform', 'receiptId'],
  properties: {
    transactionId: str,
    purchaseId: str,
    productId: str,
    platform: { type: 'string', description: 'Store platform; also the prefix of every identifier' },
    receiptId: str,
    sandbox: bool,
    purchaseDate: dateTime,
    lastRenewalDate: dateTime,
    renewalDate: dateTime,
    expirationDate: dateTime,
    renewalIntent: str,
    renewalIntentChangeDate: dateTime,
    cancelationReason: str,
    isPending: bool,
    isAcknowledged: bool,
    isConsumed: bool,
    isBillingRetryPeriod: bool,
    isTrialPeriod: bool,
    isIntroPeriod: bool,
    isExpired: bool,
    gracePeriodExpirationDate: { ...dateTime, description: 'While in billing retry: access continues until then' },
    revocationDate: { ...dateTime, description: 'When the store refunded or revoked the transaction' },
    revocationType: {
      type: 'string',
      description: "The store's kind of revocation: REFUND_FULL, REFUND_PRORATED (a partial refund) or FAMILY_REVOKE (shared access ended; nothing refunded)",
    },
    refundedShare: {
      type: 'number',
      description: 'With revocationDate: the share of the amount refunded, 0 to 1 (1 unless the store reported a partial refund; 0 for FAMILY_REVOKE)',
    },
    isUpgraded: { type: 'boolean', description: 'Replaced by another subscription (upgrade, downgrade or plan change)' },
    priceConsentStatus: str,
    discountId: { type: 'string', description: "The store's offer identifier (Apple offerIdentifier, Google offerId)" },
    offerType: {
      type: 'string',
      description: 'The offer the transaction was bought with: INTRODUCTORY, PROMOTIONAL, OFFER_CODE or WIN_BACK (Apple offerType 1-4)',
    },
    offerDiscountType: { type: 'string', description: "The offer's payment mode: FREE_TRIAL, PAY_AS_YOU_GO, PAY_UP_FRONT or ONE_TIME" },
    offerPeriod: { type: 'string', description: 'How long the offer lasts, an ISO 8601 duration (P1M)' },
    ownershipType: {
      type: 'string',
      description:
        'PURCHASED, or FAMILY_SHARED: the customer has access through Family Sharing, bought by a family member (it counts for activeSubscriber). Absent when the store does not say (Google Play)',
    },
    quantity: { type: 'integer' },
    amountUSD: {
      type: 'number',
      description:
        "Amount in USD: the producer's own, else amountMicros at the European Central Bank's rate of the charge day (lastRenewalDate, else purchaseDate), rounded to the cent; absent without a rate (docs/revenue.md)",
    },
    priceUSD: { type: 'number', description: 'Same as amountUSD' },
    amountMicros: num,
    priceMicros: { type: 'number', description: 'Same as amountMicros' },
    currency: str,
    proceedsUSD: {
      type: 'number',
      description:
        "Estimate: amountUSD less the refunded share and the store's commission (STORE_COMMISSION; the reduced rate after a subscriber's first year), rounded to the cent",
    },
    proceedsMicros: { type: 'number', description: 'The same estimate in micros of currency' },
    provenance: {
      type: 'object',
      description:
        'Where the row\'s current state came from: the event whose snapshot it shows (docs/api.md, "Provenance"). Absent for rows not projected since the field was added (until a rebuild)',
      required: ['kind', 'source', 'eventId'],
      properties: {
        kind: {
          type: 'string',
          enum: ['store-notification', 'import', 'app-purchase', 'reconciliation', 'producer'],
          description:
            "store-notification: a store's server notification (Apple, Google Play RTDN, Stripe webhook); import: `npm run cli -- import`; app-purchase: POST /v2/purchases; reconciliation: the reconciler healed it; producer: an upstream producer's event",
        },
        source: { type: 'string', description: "The event's CloudEvents source" },
        eventId: {
          type: 'string',
          description: "The event's id; for a store notification the store's own (Apple notificationUUID, Pub/Sub messageId, Stripe event id)",
        },
        receivedAt: { ...dateTime, description: 'When the event log received the event' },
      },
    },
    deleted: {
      type: 'boolean',
      description:
        'Change feed only (changedAfter, transaction.deleted webhooks): true when a rebuild from a partial log dropped the row (docs/change-feed.md, "Rebuilds"); delete your copy stored under ' +
        'transactionId. purchaseId, productId and receiptId are then empty. Absent on every other row.',
    },
  },
} as const;

export const transactionPageSchema = {
  type: 'object',
  required: ['rows', 'paging'],
  properties: { rows: { type: 'array', items: transactionSchema }, paging: pagingSchema },
} as const;

export type TransactionView = {
  transactionId: string;
  purchaseId: string;
  productId: string;
  platform: string;
  receiptId: string;
  sandbox?: boolean;
  purchaseDate?: Date;
  lastRenewalDate?: Date;
  renewalDate?: Date;
  expirationDate?: Date;
  renewalIntent?: string;
  renewalIntentChangeDate?: Date;
  cancelationReason?: string;
  isPending?: boolean;
  isAcknowledged?: boolean;
  isConsumed?: boolean;
  isBillingRetryPeriod?: boolean;
  isTrialPeriod?: boolean;
  isIntroPeriod?: boolean;
  isExpired?: boolean;
  gracePeriodExpirationDate?: Date;
  revocationDate?: Date;
  revocationType?: string;
  refundedShare?: number;
  isUpgraded?: boolean;
  priceConsentStatus?: string;
  discountId?: string;
  offerType?: string;
  offerDiscountType?: string;
  offerPeriod?: string;
  ownershipType?: string;
  quantity?: number;
  amountUSD?: number;
  priceUSD?: number;
  amountMicros?: number;
  priceMicros?: number;
  currency?: string;
  proceedsUSD?: number;
  proceedsMicros?: number;
  provenance?: Provenance;
  deleted?: true;
};
