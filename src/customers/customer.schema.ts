import { pagingSchema } from '../common/paging.js';

const dateTime = { type: 'string', format: 'date-time' } as const;

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
      },
    },
    receiptIds: { type: 'array', items: { type: 'string' } },
  },
} as const;

export const customerPageSchema = {
  type: 'object',
  required: ['rows', 'paging'],
  properties: { rows: { type: 'array', items: customerSummarySchema }, paging: pagingSchema },
} as const;

export type CustomerInfo = {
  expirationDate?: Date;
  lastPurchaseDate?: Date;
  lastRenewalDate?: Date;
  renewalIntent?: string;
  activeSubscriber?: boolean;
};

export type CustomerSummary = { applicationUsername: string; customerInfo: CustomerInfo; receiptIds: string[] };
