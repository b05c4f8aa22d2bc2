/** A validated, normalised purchase event: what the projection consumes. */
export type PurchaseEvent = TransactionUpdated | ReceiptLinked | CustomerErased;

type EventBase = {
  id: string;
  appId: string;
  /** RFC 3339 time normalised to UTC with six fraction digits, so string order is time order. */
  time: string;
  /** The producing pipeline (CloudEvents `source`): where a row's state came from (src/events/provenance.ts). */
  source?: string;
  /** When the log received the event, in the form of `time`; unset when decoded outside a log. */
  receivedAt?: string;
};

export type TransactionSnapshot = {
  transactionId: string;
  purchaseId: string;
  productId: string;
  platform: string;
  receiptId: string;
  applicationUsername?: string;
  sandbox?: boolean;
  purchaseDate?: string;
  lastRenewalDate?: string;
  renewalDate?: string;
  expirationDate?: string;
  renewalIntent?: string;
  renewalIntentChangeDate?: string;
  cancelationReason?: string;
  isPending?: boolean;
  isAcknowledged?: boolean;
  isConsumed?: boolean;
  isBillingRetryPeriod?: boolean;
  isTrialPeriod?: boolean;
  isIntroPeriod?: boolean;
  isExpired?: boolean;
  gracePeriodExpirationDate?: string;
  revocationDate?: string;
  /** REFUND_FULL, REFUND_PRORATED (a partial refund) or FAMILY_REVOKE, when the store says. */
  revocationType?: string;
  /** The share of the amount refunded, 0 to 1, when the store says (a partial refund). */
  refundedShare?: number;
  isUpgraded?: boolean;
  priceConsentStatus?: string;
  discountId?: string;
  offerType?: string;
  offerDiscountType?: string;
  offerPeriod?: string;
  ownershipType?: string;
  quantity?: number;
  /** amountUSD or priceUSD, whichever the producer sent. */
  amountUSD?: number;
  /** amountMicros or priceMicros, whichever the producer sent. */
  amountMicros?: number;
  currency?: string;
};

export type TransactionUpdated = EventBase & { type: 'transaction.updated'; data: TransactionSnapshot };
export type ReceiptLinked = EventBase & { type: 'receipt.linked'; data: { receiptId: string; applicationUsername: string } };
/**
 * The customer is forgotten (docs/privacy.md): every event naming them dated at or before `time`
 * names no one. `usernameHash` is the keyed hash (erasureHash) of the username; the service writes
 * only that, a producer may send `applicationUsername` instead (the consumer hashes it).
 */
export type CustomerErased = EventBase & { type: 'customer.erased'; data: { usernameHash?: string; applicationUsername?: string } };
