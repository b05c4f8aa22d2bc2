import type { RunQuery } from '../../change-feed/read-changes.js';
import { customerEntitlements, type EntitlementTransaction } from '../customer-entitlements.js';
import type { CustomerSummary } from '../customer.schema.js';
import { customerEntitlementsSql } from './customer-entitlements.sql.js';

type EntitlementRow = EntitlementTransaction & { applicationUsername: string; entitlements: string[] };

/** The transactions of the named customers with what their products grant now: nothing when the application defines no entitlement. */
export const readGrantingTransactions = (run: RunQuery, appId: string, names: readonly string[]): Promise<EntitlementRow[]> =>
  names.length === 0 ? Promise.resolve([]) : run<EntitlementRow>('customer-entitlements', customerEntitlementsSql, [appId, names]);

/** Sets customerInfo.entitlements of the summaries from their customers' transactions (readGrantingTransactions), decided at `now`. */
export function applyEntitlements(summaries: CustomerSummary[], found: readonly EntitlementRow[], now: Date): void {
  if (found.length === 0) return;
  const byCustomer = new Map<string, EntitlementRow[]>();
  const grants = new Map<string, string[]>();
  for (const t of found) {
    const list = byCustomer.get(t.applicationUsername) ?? [];
    byCustomer.set(t.applicationUsername, list);
    list.push(t);
    grants.set(t.productId, t.entitlements);
  }
  for (const s of summaries) {
    const transactions = s.deleted === true ? undefined : byCustomer.get(s.applicationUsername);
    if (!transactions) continue;
    const entitlements = customerEntitlements(transactions, (productId) => grants.get(productId) ?? [], now);
    if (entitlements.length > 0) s.customerInfo.entitlements = entitlements;
  }
}

/**
 * Gives the summaries customerInfo.entitlements, decided at `now`: one more statement for all of
 * them, run by every reader that shows a customer (pages, lookups, the change feed, webhooks), so
 * each shows the same entries. Deletion entries (no receipts) are left alone.
 */
export async function addEntitlements(run: RunQuery, appId: string, summaries: CustomerSummary[], now: Date): Promise<void> {
  const names = summaries.filter((s) => s.deleted !== true).map((s) => s.applicationUsername);
  applyEntitlements(summaries, await readGrantingTransactions(run, appId, names), now);
}
