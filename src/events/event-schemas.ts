// JSON Schemas (draft-07) of the purchase events, version 1. docs/events/*.schema.json are these
// objects written out; a unit test keeps the two identical.

import { APPLICATION_ID_PATTERN, MAX_APPLICATION_ID_BYTES } from '../common/application-id.js';

const dateTime = { type: 'string', format: 'date-time' } as const;
/** The form of every stored id (transactionId, productId, receiptId): `<platform>:<local id>`, 3-512 characters. */
export const PLATFORM_ID = { minLength: 3, maxLength: 512, pattern: '^[A-Za-z0-9_.-]+:.+$' } as const;
const id = (description: string) => ({ type: 'string', ...PLATFORM_ID, description }) as const;

const envelope = (type: string, data: object) => ({
  $schema: 'http://json-schema.org/draft-07/schema#',
  $id: `https://docs.subscription-records.dev/events/${type}.v1.schema.json`,
  title: `${type} (CloudEvents 1.0, structured JSON mode)`,
  type: 'object',
  required: ['specversion', 'id', 'source', 'type', 'time', 'appid', 'data'],
  properties: {
    specversion: { const: '1.0' },
    id: { type: 'string', minLength: 1, maxLength: 256, description: 'Unique per event; a repeated id is ignored' },
    source: { type: 'string', minLength: 1, maxLength: 512, description: 'The producing pipeline' },
    type: { const: type },
    time: { ...dateTime, description: 'RFC 3339; when the producer observed the state the event carries' },
    appid: {
      type: 'string',
      minLength: 1,
      maxLength: MAX_APPLICATION_ID_BYTES,
      pattern: APPLICATION_ID_PATTERN,
      description: 'Application (tenant) id, without control characters',
    },
    datacontenttype: { const: 'application/json' },
    subject: { type: 'string' },
    data,
  },
});

export const TRANSACTION_FIELDS = {
  transactionId: id('<platform>:<local id>'),
  purchaseId: { type: 'string', minLength: 1, maxLength: 512 },
  productId: id('<platform>:<local id>'),
  platform: { type: 'string', pattern: '^[A-Za-z0-9_.-]+$', minLength: 1, maxLength: 64 },
  receiptId: id('<platform>:<local id>'),
  applicationUsername: { type: 'string', minLength: 1, maxLength: 512, description: 'Links the receipt to this customer' },
  sandbox: { type: 'boolean' },
  purchaseDate: dateTime,
  lastRenewalDate: dateTime,
  renewalDate: dateTime,
  expirationDate: dateTime,
  renewalIntent: { type: 'string', maxLength: 64 },
  renewalIntentChangeDate: dateTime,
  cancelationReason: { type: 'string', maxLength: 256 },
  isPending: { type: 'boolean' },
  isAcknowledged: { type: 'boolean' },
  isConsumed: { type: 'boolean' },
  isBillingRetryPeriod: { type: 'boolean' },
  isTrialPeriod: { type: 'boolean' },
  isIntroPeriod: { type: 'boolean' },
  isExpired: { type: 'boolean' },
  gracePeriodExpirationDate: { ...dateTime, description: 'While in billing retry: access continues until then' },
  revocationDate: { ...dateTime, description: 'Refunded or revoked at that time' },
  revocationType: {
    type: 'string',
    maxLength: 64,
    description: 'How it was revoked: REFUND_FULL, REFUND_PRORATED (a partial refund, with refundedShare) or FAMILY_REVOKE (shared access ended, no refund)',
  },
  refundedShare: { type: 'number', minimum: 0, maximum: 1, description: 'The share of the amount refunded, 0 to 1; absent with a revocation means all of it' },
  isUpgraded: { type: 'boolean', description: 'Replaced by another subscription (upgrade, downgrade, plan change)' },
  priceConsentStatus: { type: 'string', maxLength: 64 },
  discountId: { type: 'string', maxLength: 256 },
  offerType: { type: 'string', maxLength: 64, description: 'The offer the transaction was bought with: INTRODUCTORY, PROMOTIONAL, OFFER_CODE, WIN_BACK' },
  offerDiscountType: { type: 'string', maxLength: 64, description: "The offer's payment mode: FREE_TRIAL, PAY_AS_YOU_GO, PAY_UP_FRONT, ONE_TIME" },
  offerPeriod: { type: 'string', maxLength: 64, description: 'How long the offer lasts, an ISO 8601 duration (P1M)' },
  ownershipType: { type: 'string', maxLength: 64, description: 'PURCHASED, or FAMILY_SHARED: access shared by a family member who bought it' },
  quantity: { type: 'integer', minimum: 0, maximum: 2147483647 },
  amountUSD: { type: 'number' },
  priceUSD: { type: 'number', description: 'Same as amountUSD; give either' },
  amountMicros: { type: 'integer', minimum: -9007199254740991, maximum: 9007199254740991 },
  priceMicros: { type: 'integer', description: 'Same as amountMicros; give either', minimum: -9007199254740991, maximum: 9007199254740991 },
  currency: { type: 'string', pattern: '^[A-Z]{3}$' },
} as const;

export const transactionUpdatedSchema = envelope('transaction.updated', {
  type: 'object',
  description: 'Snapshot of one transaction. Unknown fields are ignored.',
  required: ['transactionId', 'purchaseId', 'productId', 'platform', 'receiptId'],
  properties: TRANSACTION_FIELDS,
});

export const receiptLinkedSchema = envelope('receipt.linked', {
  type: 'object',
  required: ['receiptId', 'applicationUsername'],
  properties: {
    receiptId: id('<platform>:<local id>'),
    applicationUsername: { type: 'string', minLength: 1, maxLength: 512 },
  },
});

export const customerErasedSchema = envelope('customer.erased', {
  type: 'object',
  description:
    'Forget a customer: every event naming them dated at or before `time` names no one (docs/privacy.md). Give exactly one of usernameHash (what the service writes) or applicationUsername.',
  minProperties: 1,
  maxProperties: 1,
  properties: {
    usernameHash: {
      type: 'string',
      pattern: '^[0-9a-f]{64}$',
      description: 'HMAC-SHA256 of appid, a NUL byte and the username under the key in public.erasure_key, lower-case hex',
    },
    applicationUsername: { type: 'string', minLength: 1, maxLength: 512 },
  },
});

export const EVENT_SCHEMAS = {
  'transaction.updated': transactionUpdatedSchema,
  'receipt.linked': receiptLinkedSchema,
  'customer.erased': customerErasedSchema,
} as const;
