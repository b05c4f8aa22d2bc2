import type { CustomerInfo } from './customer.schema.js';

/** What the read model aggregates over the transactions of a customer's current receipts. */
export type CustomerFacts = {
  transactionCount: number;
  lastPurchaseDate: Date | null;
  /** Latest expirationDate of any transaction, and the renewal fields of the transaction holding it. */
  expirationDate: Date | null;
  lastRenewalDate: Date | null;
  renewalIntent: string | null;
  /** Latest expirationDate among transactions not flagged isExpired. */
  activeUntil: Date | null;
};

/**
 * activeSubscriber is decided here, at request time, so a subscription stops being active the
 * moment its expiration passes without any event arriving.
 */
export function customerInfo(facts: CustomerFacts, now: Date): CustomerInfo {
  if (facts.transactionCount === 0) return {};
  const info: CustomerInfo = {};
  if (facts.expirationDate) info.expirationDate = facts.expirationDate;
  if (facts.lastPurchaseDate) info.lastPurchaseDate = facts.lastPurchaseDate;
  if (facts.lastRenewalDate) info.lastRenewalDate = facts.lastRenewalDate;
  if (facts.renewalIntent) info.renewalIntent = facts.renewalIntent;
  info.activeSubscriber = facts.activeUntil !== null && facts.activeUntil.getTime() > now.getTime();
  return info;
}
