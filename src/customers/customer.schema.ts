import { pagingSchema } from '../common/paging.js';

const dateTime = { type: 'string', format: 'date-time' } as const;

/** One entry of customerInfo.entitlements (docs/entitlements.md). */
export const entitlementInfoSchema = {
  type: 'object',
  required: ['identifier', 'isActive', 'productId', 'transactionId', 'isInGracePeriod', 'isInBillingRetry'],
  properties: {
    identifier: { type: 'string', description: 'The entitlement (GET /v2/entitlements)' },
    isActive: { type: 'boolean', description: "Access now, at the request's instant, as activeSubscriber" },
    expirationDate: {
      ...dateTime,
      description: 'Access end of the granting transaction (grace included, cut short by a refund); absent for a lifetime (non-consumable) purchase',
    },
    productId: { type: 'string', description: 'The product of the transaction that grants it (gives access now, else ended last)' },
    transactionId: { type: 'string', description: 'That transaction' },
    purchaseDate: dateTime,
    lastRenewalDate: dateTime,
    renewalDate: dateTime,
    renewalIntent: { type: 'string' },
    isInGracePeriod: { type: 'boolean', description: "Access lasts only by the store's grace period (status grace_period)" },
    isInBillingRetry: { type: 'boolean', description: 'No access, the store still retries billing (status billing_retry)' },
  },
} as const;

export const customerSummarySchema = {
  type: 'object',
  required: ['applicationUsername', 'customerInfo', 'receiptIds'],
  properties: {
    applicationUsername: { type: 'string' },
    customerInfo: {
      type: 'object',
      description: 'Empty when no transaction is linked to the customer',
      properties: {
        expirationDate: dateTime,
        lastPurchaseDate: dateTime,
        lastRenewalDate: dateTime,
        renewalIntent: { type: 'string' },
        activeSubscriber: { type: 'boolean' },
        entitlements: {
          type: 'array',
          items: entitlementInfoSchema,
          description:
            'GET /v2/customers only: one entry per entitlement the customer holds or held under the current definitions, by identifier (docs/entitlements.md). ' +
            'Absent when none.',
        },
      },
    },
    receiptIds: { type: 'array', items: { type: 'string' } },
    deleted: {
      type: 'boolean',
      description:
        'Change feed only (changedAfter, customer.deleted webhooks): true when the customer was removed (erased, docs/privacy.md); delete your copy stored under ' +
        'applicationUsername. customerInfo is then {} and receiptIds []. Absent on every other row.',
    },
  },
} as const;

export const customerPageSchema = {
  type: 'object',
  required: ['rows', 'paging'],
  properties: { rows: { type: 'array', items: customerSummarySchema }, paging: pagingSchema },
} as const;

export type EntitlementInfo = {
  identifier: string;
  isActive: boolean;
  expirationDate?: Date;
  productId: string;
  transactionId: string;
  purchaseDate?: Date;
  lastRenewalDate?: Date;
  renewalDate?: Date;
  renewalIntent?: string;
  isInGracePeriod: boolean;
  isInBillingRetry: boolean;
};

export type CustomerInfo = {
  expirationDate?: Date;
  lastPurchaseDate?: Date;
  lastRenewalDate?: Date;
  renewalIntent?: string;
  activeSubscriber?: boolean;
  entitlements?: EntitlementInfo[];
};

export type CustomerSummary = { applicationUsername: string; customerInfo: CustomerInfo; receiptIds: string[]; deleted?: true };
