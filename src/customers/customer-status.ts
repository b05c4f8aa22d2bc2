// A customer's status at an instant (GET /v2/customers?status=..., docs/api.md "Customer status"),
// from the stored summary alone, like activeSubscriber: no event is needed for a customer to move
// from `active` to `expired`. Every customer is in exactly one status. Nothing stores a status: the
// listing decides it at read time with statusSql, the same rule in SQL; a test holds the two equal.

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
  const { expirationDate: end, graceFrom, billingRetry } = facts;
  if (end === null) return 'none';
  if (end > now) return graceFrom !== null && graceFrom <= now ? 'grace_period' : 'active';
  return billingRetry ? 'billing_retry' : 'expired';
}

/** The SQL expressions statusSql reads the facts from; a null access end or grace start is none. */
export type StatusColumns = { end: string; graceFrom: string; billingRetry: string };

export const CUSTOMER_ROW: StatusColumns = { end: 'expiration_date', graceFrom: 'grace_from', billingRetry: 'billing_retry' };

/**
 * customerStatus in SQL: the status (text) of the facts in `c` at `at`, an expression of their type.
 * The listing decides statuses with it on customer rows (instants) and on count cells (UTC days, for
 * cells whose days differ from the instant's, where comparing days is comparing instants).
 */
export const statusSql = (at: string, c: StatusColumns = CUSTOMER_ROW) => `(CASE WHEN ${c.end} IS NULL THEN 'none'
  WHEN ${c.end} > ${at} THEN (CASE WHEN ${c.graceFrom} <= ${at} THEN 'grace_period' ELSE 'active' END)
  WHEN ${c.billingRetry} THEN 'billing_retry' ELSE 'expired' END)`;
