// A customer's status at an instant (GET /v2/customers?status=..., docs/api.md "Customer status"),
// from the stored summary alone, like activeSubscriber: no event is needed for a customer to move
// from `active` to `expired`. Every customer is in exactly one status. The SQL predicates of
// list-customers.sql.ts (statusPredicate) are the same rules; a test holds them to this function.

export const CUSTOMER_STATUSES = ['active', 'grace_period', 'billing_retry', 'expired', 'none'] as const;
export type CustomerStatus = (typeof CUSTOMER_STATUSES)[number];

/** What the status reads of the stored summary (customerInfo's expirationDate is the access end). */
export type StatusFacts = {
  /** Access end of the current subscription; null: no transaction ever granted access. */
  expirationDate: Date | null;
  /** From this instant on, access lasts only because of a store grace period (rule 4); null: no grace. */
  graceFrom: Date | null;
  /** The store still retries billing the current subscription. */
  billingRetry: boolean;
};

/**
 * In the order a reader ticks them off:
 * 1. `none`: no current subscription (no transaction ever granted access: no transactions, only
 *    pending purchases, only consumables/non-consumables);
 * 2. access now (access end > now, as activeSubscriber):
 *    `grace_period` when the access end is a grace end and the subscription's own expiration has
 *    passed (graceFrom <= now), else `active`;
 * 3. no access: `billing_retry` while the store still retries billing, else `expired` (lapsed,
 *    refunded, revoked, replaced).
 */
export function customerStatus(facts: StatusFacts, now: Date): CustomerStatus {
  return statusAt(facts.expirationDate?.getTime() ?? null, facts.graceFrom?.getTime() ?? null, facts.billingRetry, now.getTime());
}

/** customerStatus over instants as numbers on one scale (epoch milliseconds, or microseconds where stored times carry them). */
export function statusAt(expiration: number | null, graceFrom: number | null, billingRetry: boolean, now: number): CustomerStatus {
  if (expiration === null) return 'none';
  if (expiration > now) return graceFrom !== null && graceFrom <= now ? 'grace_period' : 'active';
  return billingRetry ? 'billing_retry' : 'expired';
}
