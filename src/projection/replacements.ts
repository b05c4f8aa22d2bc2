// Replacement by another transaction (docs/api.md, rule 2): the shown isUpgraded/cancelationReason
// of a transaction depend on the other transactions of its receipt, so whenever a batch writes
// transactions of a receipt, the receipt's rows are looked at again. The rule is
// replacementFlags (project-events.ts); this fetches and stores.
import type { EntityManager } from 'typeorm';
import { iso } from './customer-summary.sql.js';
import { replacementFlags, type ReplacementCandidate, type ShownReplacement } from './project-events.js';

type Query = Pick<EntityManager, 'query'>;
export type ReceiptKey = { app_id: string; receipt_id: string };

export const replacementSql = (schema: string) => ({
  /**
   * The transactions of the given receipts ($1 app ids, $2 receipt ids) that a replacement can
   * concern: those of a purchase with more than one product on the receipt, and those shown
   * differently from their snapshot (marked before; maybe no longer). The rule itself is applied
   * by the caller.
   */
  candidates: `
    WITH rows AS MATERIALIZED (
      SELECT t.* FROM (SELECT DISTINCT * FROM unnest($1::text[], $2::text[])) AS k(app_id, receipt_id)
      JOIN ${schema}.transactions t ON t.app_id = k.app_id AND t.receipt_id = k.receipt_id
    ), changed_products AS (
      SELECT app_id, receipt_id, purchase_id FROM rows GROUP BY 1, 2, 3 HAVING min(product_id) <> max(product_id)
    )
    SELECT t.app_id, t.transaction_id, t.receipt_id, t.purchase_id, t.product_id,
           ${iso('t.occurred_at')} AS occurred_at, ${iso('t.version_time')} AS version_time,
           ${iso('t.expiration_date')} AS expiration_date, ${iso('t.revocation_date')} AS revocation_date,
           t.is_pending, t.is_expired, t.is_upgraded, t.cancelation_reason, t.snapshot_is_upgraded, t.snapshot_cancelation_reason
    FROM rows t
    WHERE t.is_upgraded IS DISTINCT FROM t.snapshot_is_upgraded
       OR t.cancelation_reason IS DISTINCT FROM t.snapshot_cancelation_reason
       OR (t.app_id, t.receipt_id, t.purchase_id) IN (SELECT * FROM changed_products)`,

  /** Receipts holding a purchase with more than one product: where a fold looks for replacements. */
  receiptsWithProductChanges: `
    SELECT DISTINCT app_id, receipt_id FROM ${schema}.transactions
    GROUP BY app_id, receipt_id, purchase_id HAVING count(DISTINCT product_id) > 1
    ORDER BY app_id, receipt_id`,

  /** The shown flags replacementFlags decided, in key order. */
  setShown: `
    UPDATE ${schema}.transactions t SET is_upgraded = x.is_upgraded, cancelation_reason = x.cancelation_reason
    FROM unnest($1::text[], $2::text[], $3::boolean[], $4::text[]) AS x(app_id, id, is_upgraded, cancelation_reason)
    WHERE t.app_id = x.app_id AND t.transaction_id = x.id`,
});

/**
 * Marks (or unmarks) the transactions of `receipts` that another transaction replaced; returns the
 * rows changed. The caller holds the receipts (apply-batch's receipt locks, or a fold's generation).
 */
export async function applyReplacements(m: Query, schema: string, receipts: readonly ReceiptKey[]): Promise<ShownReplacement[]> {
  if (receipts.length === 0) return [];
  const q = replacementSql(schema);
  const rows = (await m.query(q.candidates, [receipts.map((r) => r.app_id), receipts.map((r) => r.receipt_id)])) as ReplacementCandidate[];
  const changes = replacementFlags(rows).sort((a, b) =>
    a.app_id === b.app_id ? (a.transaction_id < b.transaction_id ? -1 : 1) : a.app_id < b.app_id ? -1 : 1,
  );
  if (changes.length > 0) {
    await m.query(q.setShown, [
      changes.map((c) => c.app_id),
      changes.map((c) => c.transaction_id),
      changes.map((c) => c.is_upgraded),
      changes.map((c) => c.cancelation_reason),
    ]);
  }
  return changes;
}

/** Every replacement of a generation just folded (rebuild, verify), a chunk of receipts at a time. */
export async function applyAllReplacements(m: Query, schema: string, chunk = 2000): Promise<number> {
  const receipts = (await m.query(replacementSql(schema).receiptsWithProductChanges)) as ReceiptKey[];
  let changed = 0;
  for (let i = 0; i < receipts.length; i += chunk) changed += (await applyReplacements(m, schema, receipts.slice(i, i + chunk))).length;
  return changed;
}
