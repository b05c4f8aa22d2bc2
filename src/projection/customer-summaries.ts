import type { EntityManager } from 'typeorm';
import { summarizeCustomer, type LifecycleTransaction } from '../customers/customer-summary.js';
import { customerSummarySql } from './customer-summary.sql.js';

export type CustomerKey = { app_id: string; name: string };

type TransactionFacts = {
  app_id: string;
  application_username: string;
  transaction_id: string;
  transaction_date: string;
  snapshot_time: string;
  expiration_date: string | null;
  grace_period_expiration_date: string | null;
  revocation_date: string | null;
  is_pending: boolean | null;
  is_upgraded: boolean | null;
  is_expired: boolean | null;
  is_billing_retry_period: boolean | null;
  cancelation_reason: string | null;
  last_renewal_date: string | null;
  renewal_intent: string | null;
};

const key = (appId: string, name: string) => `${appId}\u0000${name}`;

/**
 * Recomputes and stores the summaries of the given customers (sorted by key, rows already locked
 * by the caller) from the transactions of the receipts they own now.
 */
export async function refreshSummaries(m: Pick<EntityManager, 'query'>, schema: string, customers: readonly CustomerKey[]): Promise<void> {
  if (customers.length === 0) return;
  const q = customerSummarySql(schema);
  const rows = (await m.query(q.owned, [customers.map((c) => c.app_id), customers.map((c) => c.name)])) as (Partial<TransactionFacts> &
    Pick<TransactionFacts, 'app_id' | 'application_username'> & { receipt_id: string })[];

  const receiptIds = new Map<string, string[]>();
  for (const r of rows) {
    const k = key(r.app_id, r.application_username);
    const list = receiptIds.get(k) ?? [];
    if (list[list.length - 1] !== r.receipt_id) list.push(r.receipt_id);
    receiptIds.set(k, list);
  }
  const transactions = rows.filter((r): r is TransactionFacts & { receipt_id: string } => typeof r.transaction_id === 'string');
  const owned = new Map<string, LifecycleTransaction[]>();
  for (const t of transactions) {
    const k = key(t.app_id, t.application_username);
    const list = owned.get(k) ?? [];
    list.push({
      transactionId: t.transaction_id,
      transactionDate: t.transaction_date,
      snapshotTime: t.snapshot_time,
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
    });
    owned.set(k, list);
  }
  const summaries = customers.map((c) => {
    const k = key(c.app_id, c.name);
    const facts = summarizeCustomer(owned.get(k) ?? []);
    return {
      app_id: c.app_id,
      application_username: c.name,
      receipt_ids: receiptIds.get(k) ?? [],
      transaction_count: facts.transactionCount,
      last_purchase_date: facts.lastPurchaseDate,
      expiration_date: facts.expirationDate,
      last_renewal_date: facts.lastRenewalDate,
      renewal_intent: facts.renewalIntent,
    };
  });
  await m.query(q.store, [JSON.stringify(summaries)]);
}

/** Re-derives every customer's summary, a chunk of customers per statement (migrations, bulk loads). */
export async function refreshAllSummaries(m: Pick<EntityManager, 'query'>, schema: string, chunk = 2000): Promise<number> {
  const q = customerSummarySql(schema);
  let after = { app_id: '', application_username: '' };
  let done = 0;
  for (;;) {
    const keys = (await m.query(q.keysAfter, [after.app_id, after.application_username, chunk])) as { app_id: string; application_username: string }[];
    if (keys.length === 0) return done;
    await refreshSummaries(m, schema, keys.map((k) => ({ app_id: k.app_id, name: k.application_username })));
    done += keys.length;
    after = keys[keys.length - 1];
  }
}
