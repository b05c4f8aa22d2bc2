import type { CustomerInfo } from './customer.schema.js';

/** The summary the projection keeps on each customer row (summarizeCustomer), as read back. */
export type StoredCustomerFacts = {
  transactionCount: number;
  lastPurchaseDate: Date | null;
  /** Access end of the current subscription. */
  expirationDate: Date | null;
  lastRenewalDate: Date | null;
  renewalIntent: string | null;
};

/**
 * activeSubscriber is decided here, at request time, so a subscription stops being active the
 * moment its access end passes without any event arriving.
 */
export function customerInfo(facts: StoredCustomerFacts, now: Date): CustomerInfo {
  if (facts.transactionCount === 0) return {};
  const info: CustomerInfo = {};
  if (facts.expirationDate) info.expirationDate = facts.expirationDate;
  if (facts.lastPurchaseDate) info.lastPurchaseDate = facts.lastPurchaseDate;
  if (facts.lastRenewalDate) info.lastRenewalDate = facts.lastRenewalDate;
  if (facts.renewalIntent) info.renewalIntent = facts.renewalIntent;
  info.activeSubscriber = facts.expirationDate !== null && facts.expirationDate.getTime() > now.getTime();
  return info;
}
