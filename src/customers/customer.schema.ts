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

export type CustomerInfo = {
  expirationDate?: Date;
  lastPurchaseDate?: Date;
  lastRenewalDate?: Date;
  renewalIntent?: string;
  activeSubscriber?: boolean;
};

export type CustomerSummary = { applicationUsername: string; customerInfo: CustomerInfo; receiptIds: string[]; deleted?: true };
