import { createHash } from 'node:crypto';
import { APP_LINK_PREFIX } from '../../customers/receipt-links/app-links.js';
import type { ContractEvent } from '../../store-notifications/apple/apple-to-events.js';

/** A receipt's owner as the read models hold it (read_model.receipts); null: a customer since erased. */
export type StoredOwner = { applicationUsername: string | null; versionMs: number; versionId: string };

export type OwnershipRule = 'transfer' | 'keep';

export type PurchasePlan =
  /** keep: the app keeps first owners; unproven: what was sent proves no purchase (a bare transaction id), so it moves nothing. */
  | { kind: 'conflict'; receiptId: string; owner: string; reason: 'keep' | 'unproven' }
  | {
      kind: 'publish';
      /** What goes into the log: the store's events the read models do not hold yet, and the links this request makes. */
      events: ContractEvent[];
      /** The links made (one per receipt the user does not own yet). */
      links: ContractEvent[];
      /** Receipts that move away from another user. */
      transferred: string[];
    };

/**
 * What recording a purchase for `username` publishes (docs/purchases.md, "What happens"). The store's
 * own links (an appAccountToken, an obfuscatedExternalAccountId) are dropped: this request says who
 * owns the purchase. A receipt that another user owns, or that the store's data names another user
 * for, is refused under `keep`, moved under `transfer`. Each receipt the user does not own yet gets a
 * receipt.linked at `now`, or just after the stored link when that is later, so it wins; its id
 * names the link it supersedes, so the same request on the same state is the same event. The
 * store's events the read models already hold at that version or a newer one are left out: a
 * purchase handed over twice publishes nothing the second time. Only a proof of purchase (a signed
 * transaction, a Google purchase token) moves one: a transaction id, or an app receipt Apple's
 * library reads without checking its signature, is anyone's to send (docs/security.md).
 */
export function planPurchase(o: {
  appId: string;
  username: string;
  rule: OwnershipRule;
  /** Whether what was sent proves the caller holds the purchase. */
  proof: boolean;
  events: readonly ContractEvent[];
  owners: ReadonlyMap<string, StoredOwner>;
  /** Ids of the store's transaction events the read models hold at that version or newer. */
  applied: ReadonlySet<string>;
  now: Date;
}): PurchasePlan {
  const transactions = o.events.filter((e) => e.type === 'transaction.updated');
  const receipts = [...new Set(transactions.map((e) => e.data.receiptId))];
  const named = new Map<string, Set<string>>();
  for (const e of o.events) {
    const name = e.data.applicationUsername;
    if (typeof name !== 'string') continue;
    const names = named.get(e.data.receiptId) ?? new Set<string>();
    named.set(e.data.receiptId, names.add(name));
  }
  const transferred: string[] = [];
  for (const receiptId of receipts) {
    const stored = o.owners.get(receiptId)?.applicationUsername;
    const others = [stored, ...(named.get(receiptId) ?? [])].filter((n): n is string => typeof n === 'string' && n !== o.username);
    if (others.length === 0) continue;
    if (o.rule === 'keep' || !o.proof) return { kind: 'conflict', receiptId, owner: others[0], reason: o.rule === 'keep' ? 'keep' : 'unproven' };
    transferred.push(receiptId);
  }
  const links: ContractEvent[] = [];
  for (const receiptId of receipts) {
    const stored = o.owners.get(receiptId);
    if (stored?.applicationUsername === o.username) continue;
    const at = Math.max(o.now.getTime(), stored ? stored.versionMs + 1 : 0);
    links.push({
      specversion: '1.0',
      id: `${APP_LINK_PREFIX}${digest([o.appId, receiptId, o.username, stored?.versionId ?? ''])}`,
      source: 'subscription-records-purchases',
      type: 'receipt.linked',
      time: new Date(at).toISOString(),
      appid: o.appId,
      datacontenttype: 'application/json',
      data: { receiptId, applicationUsername: o.username },
    });
  }
  const fresh = transactions.filter((e) => !o.applied.has(e.id));
  return { kind: 'publish', events: [...fresh, ...links], links, transferred };
}

const digest = (parts: readonly string[]) => createHash('sha256').update(parts.join('\u0000')).digest('base64url').slice(0, 32);
