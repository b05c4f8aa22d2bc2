import { appLinksSql } from './app-links.sql.js';

type Query = { query: (sql: string, params?: unknown[]) => Promise<unknown> };
type LinkLike = { id?: unknown; type?: unknown; appid?: unknown; data?: object };

/** The id prefix of the receipt.linked events POST /v2/purchases makes (purchase-plan.ts). */
export const APP_LINK_PREFIX = 'purchase-link:';

/**
 * A receipt an app linked (POST /v2/purchases: a transfer, or a first link) stays with that user
 * until the app links it again: the stores' own links (an appAccountToken, an
 * obfuscatedExternalAccountId, which Google never lets anyone change) name who bought it, not who
 * owns it now, and would otherwise move it back at their next notification (docs/purchases.md,
 * "Ownership"). Such a store link naming another user is left out; everything else passes.
 */
export async function yieldToAppLinks<E extends LinkLike>(db: Query, events: readonly E[]): Promise<E[]> {
  const storeLinks = events.filter(
    (e) =>
      e.type === 'receipt.linked' && typeof e.id === 'string' && !e.id.startsWith(APP_LINK_PREFIX) && typeof e.appid === 'string' && receiptOf(e) !== undefined,
  );
  if (storeLinks.length === 0) return [...events];
  const rows = (await db.query(appLinksSql.ownedByApps, [storeLinks.map((e) => e.appid), storeLinks.map(receiptOf), APP_LINK_PREFIX])) as {
    app_id: string;
    receipt_id: string;
    application_username: string | null;
  }[];
  const owner = new Map(rows.map((r) => [`${r.app_id}\u0000${r.receipt_id}`, r.application_username]));
  return events.filter((e) => {
    if (!storeLinks.includes(e)) return true;
    const key = `${String(e.appid)}\u0000${receiptOf(e)}`;
    return !owner.has(key) || owner.get(key) === (e.data as { applicationUsername?: unknown }).applicationUsername;
  });
}

const receiptOf = (e: LinkLike) => {
  const id = (e.data as { receiptId?: unknown } | undefined)?.receiptId;
  return typeof id === 'string' ? id : undefined;
};
