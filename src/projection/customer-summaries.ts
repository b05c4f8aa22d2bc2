import type { EntityManager } from 'typeorm';
import { grantsDigest, type EntitlementTransaction } from '../customers/customer-entitlements.js';
import { summarizeCustomer, type CustomerFacts } from '../customers/customer-summary.js';
import type { TransactionRow } from './project-events.js';
import { customerSummarySql } from './customer-summary.sql.js';
import { recountCustomerCellsSql } from './customer-cells.js';

export type CustomerKey = { app_id: string; name: string };

type OwnedReceipt = { app_id: string; application_username: string; receipt_id: string };

/** The columns of a transaction row the rules read (lifecycleOf). */
type TransactionFacts = Pick<
  TransactionRow,
  | 'transaction_id'
  | 'receipt_id'
  | 'purchase_id'
  | 'product_id'
  | 'occurred_at'
  | 'version_time'
  | 'expiration_date'
  | 'grace_period_expiration_date'
  | 'revocation_date'
  | 'is_pending'
  | 'is_upgraded'
  | 'is_expired'
  | 'is_billing_retry_period'
  | 'cancelation_reason'
  | 'last_renewal_date'
  | 'renewal_intent'
  | 'purchase_date'
  | 'renewal_date'
  | 'is_consumed'
  | 'snapshot_is_upgraded'
  | 'snapshot_cancelation_reason'
>;

const key = (appId: string, name: string) => `${appId}\u0000${name}`;

/**
 * The transaction rows the calling batch wrote, by receipt key: the read leaves out what this
 * PostgreSQL transaction wrote and these images stand in, except `partial` ids (rows whose whole
 * image the writer does not hold), which are read.
 */
export type BatchWrites = { byReceipt: ReadonlyMap<string, readonly TransactionRow[]>; keys: ReadonlySet<string>; partial: readonly string[] };

/**
 * A customer's summary as stored, with the sum its entitlements' facts hash to (grantsDigest; null:
 * not known, as on a row from before it was kept).
 */
export type StoredSummary = CustomerKey & { facts: CustomerFacts; grantsDigest: bigint | null };
/** A summary the caller derived without reading the customer's transactions (extendSummary). */
export type ExtendedSummary = StoredSummary;

/** What the rules (the lifecycle's and the entitlements') read of a transaction row, in the projection's row image. */
export const lifecycleOf = (t: TransactionFacts): EntitlementTransaction => ({
  transactionId: t.transaction_id,
  receiptId: t.receipt_id,
  purchaseId: t.purchase_id,
  productId: t.product_id,
  transactionDate: t.occurred_at,
  snapshotTime: t.version_time,
  expirationDate: t.expiration_date,
  gracePeriodExpirationDate: t.grace_period_expiration_date,
  revocationDate: t.revocation_date,
  isPending: t.is_pending,
  isUpgraded: t.is_upgraded,
  isExpired: t.is_expired,
  isBillingRetryPeriod: t.is_billing_retry_period,
  cancelationReason: t.cancelation_reason,
  lastRenewalDate: t.last_renewal_date,
  renewalIntent: t.renewal_intent,
  purchaseDate: t.purchase_date,
  renewalDate: t.renewal_date,
  isConsumed: t.is_consumed,
  snapshotIsUpgraded: t.snapshot_is_upgraded,
  snapshotCancelationReason: t.snapshot_cancelation_reason,
});

/**
 * Recomputes the summaries of the given customers (sorted by key, rows already locked by the
 * caller) from the transactions of the receipts they own now, and stores them with the `extended`
 * ones, whose receipts did not change. Returns what it stored, for the callers' counts (a customer
 * without a row is stored nowhere: only the callers know which rows exist).
 */
export async function refreshSummaries(
  m: Pick<EntityManager, 'query'>,
  schema: string,
  customers: readonly CustomerKey[],
  extended: readonly ExtendedSummary[] = [],
  writes?: BatchWrites,
): Promise<StoredSummary[]> {
  if (customers.length === 0 && extended.length === 0) return [];
  const q = customerSummarySql(schema);
  const rows =
    customers.length === 0
      ? []
      : ((await m.query(
          writes ? q.ownedBesidesOwnWrites : q.owned,
          writes
            ? [customers.map((c) => c.app_id), customers.map((c) => c.name), writes.partial]
            : [customers.map((c) => c.app_id), customers.map((c) => c.name)],
        )) as (Partial<TransactionFacts> & OwnedReceipt)[]);

  const receiptIds = new Map<string, string[]>();
  const owned = new Map<string, EntitlementTransaction[]>();
  for (const r of rows) {
    const k = key(r.app_id, r.application_username);
    const receipts = receiptIds.get(k) ?? [];
    const transactions = owned.get(k) ?? [];
    receiptIds.set(k, receipts);
    owned.set(k, transactions);
    if (receipts[receipts.length - 1] !== r.receipt_id) {
      receipts.push(r.receipt_id);
      for (const t of writes?.byReceipt.get(key(r.app_id, r.receipt_id)) ?? []) transactions.push(lifecycleOf(t));
    }
    if (typeof r.transaction_id === 'string' && !writes?.keys.has(key(r.app_id, r.transaction_id))) transactions.push(lifecycleOf(r as TransactionFacts));
  }
  const stored: (StoredSummary & { receipt_ids?: string[] })[] = [
    ...customers.map((c) => {
      const k = key(c.app_id, c.name);
      const transactions = owned.get(k) ?? [];
      return { ...c, facts: summarizeCustomer(transactions), grantsDigest: grantsDigest(transactions), receipt_ids: receiptIds.get(k) ?? [] };
    }),
    // receipt_ids left out (undefined): the stored list stays
    ...extended.map((e) => ({ app_id: e.app_id, name: e.name, facts: e.facts, grantsDigest: e.grantsDigest })),
  ];
  const summaries = stored.map(({ app_id, name, facts, grantsDigest, receipt_ids }) => ({
    app_id,
    application_username: name,
    receipt_ids,
    transaction_count: facts.transactionCount,
    last_purchase_date: facts.lastPurchaseDate,
    expiration_date: facts.expirationDate,
    last_renewal_date: facts.lastRenewalDate,
    renewal_intent: facts.renewalIntent,
    current_product_id: facts.productId,
    grace_from: facts.graceFrom,
    billing_retry: facts.billingRetry,
    // text: a JSON number would lose the low bits
    grants_digest: grantsDigest === null ? null : String(grantsDigest),
  }));
  await m.query(q.store, [JSON.stringify(summaries)]);
  return stored;
}

/** Re-derives every customer's summary, a chunk of customers per statement (migrations, bulk loads), and counts their filter cells again. */
export async function refreshAllSummaries(m: Pick<EntityManager, 'query'>, schema: string, chunk = 2000): Promise<number> {
  const q = customerSummarySql(schema);
  let after = { app_id: '', application_username: '' };
  let done = 0;
  for (;;) {
    const keys = (await m.query(q.keysAfter, [after.app_id, after.application_username, chunk])) as { app_id: string; application_username: string }[];
    if (keys.length === 0) {
      // A schema from before migration CustomerEndWeeks1766000000000 keeps no cells: that migration counts them.
      const [{ cells }] = (await m.query(`SELECT to_regclass('${schema}.customer_end_weeks') IS NOT NULL AS cells`)) as { cells: boolean }[];
      if (cells) for (const statement of recountCustomerCellsSql(schema)) await m.query(statement);
      return done;
    }
    await refreshSummaries(
      m,
      schema,
      keys.map((k) => ({ app_id: k.app_id, name: k.application_username })),
    );
    done += keys.length;
    after = keys[keys.length - 1];
  }
}
