import { storedTransactionSql } from './stored-transaction.sql.js';

type Query = { query: (sql: string, params?: unknown[]) => Promise<unknown> };

/** A transaction as the read models show it, in the contract's field names (absent fields left out), and the time of that snapshot. */
export type StoredTransaction = { snapshot: Record<string, unknown>; versionTime: Date };

/** What the read models show of one transaction, or undefined when they hold none. */
export async function storedTransaction(db: Query, appId: string, transactionId: string): Promise<StoredTransaction | undefined> {
  const [row] = (await db.query(storedTransactionSql, [appId, transactionId])) as (Record<string, unknown> & { versionTime: Date | string })[];
  if (!row) return undefined;
  const { versionTime, ...shown } = row;
  // amountMicros is a bigint column (text from pg); the contract carries a number
  const snapshot = Object.fromEntries(
    Object.entries({ ...shown, amountMicros: shown.amountMicros === null || shown.amountMicros === undefined ? null : Number(shown.amountMicros) }).filter(
      ([, value]) => value !== null && value !== undefined,
    ),
  );
  return { snapshot, versionTime: new Date(versionTime) };
}

/**
 * A refund or a lost dispute, on what the store last said of the transaction: the same snapshot,
 * revoked at `revokedAt` (docs/api.md, "Access end": a revocation ends access then). The stores'
 * refund notifications name the payment only, never its state.
 */
export function revokedSnapshot(snapshot: Record<string, unknown>, revokedAt: Date): Record<string, unknown> & { receiptId: string } {
  return { ...snapshot, revocationDate: revokedAt.toISOString(), isExpired: true, cancelationReason: 'Customer' } as unknown as Record<string, unknown> & {
    receiptId: string;
  };
}

/**
 * A revocation stays: a store's later state of the same transaction that does not say it (Stripe's
 * subscription after a refund of its latest invoice, Google's subscription state, which never shows
 * a refund) keeps the stored revocation, with its kind and refunded share (revenue's). A refund does
 * not un-happen; the row's other facts follow the newer state.
 */
export function keepingRevocation(data: Record<string, unknown>, stored: Record<string, unknown> | undefined): Record<string, unknown> {
  const revoked = stored?.revocationDate;
  if (!(revoked instanceof Date || typeof revoked === 'string') || data.revocationDate !== undefined) return data;
  const kept: Record<string, unknown> = {
    ...data,
    revocationDate: new Date(revoked).toISOString(),
    isExpired: true,
    cancelationReason: stored!.cancelationReason ?? 'Customer',
  };
  if (stored!.revocationType !== undefined && stored!.revocationType !== null) kept.revocationType = stored!.revocationType;
  if (stored!.refundedShare !== undefined && stored!.refundedShare !== null) kept.refundedShare = Number(stored!.refundedShare);
  return kept;
}

/** keepingRevocation over a store's events: each transaction's stored snapshot read, its revocation kept (Stripe's webhooks and import). */
export async function keepRevocations(db: Query, appId: string, events: readonly { type: string; data: Record<string, unknown> }[]): Promise<void> {
  for (const event of events) {
    if (event.type !== 'transaction.updated') continue;
    const stored = await storedTransaction(db, appId, String(event.data.transactionId));
    event.data = keepingRevocation(event.data, stored?.snapshot);
  }
}
