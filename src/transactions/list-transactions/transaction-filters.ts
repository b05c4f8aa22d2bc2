import { InvalidParameterError } from '../../common/errors.js';

/** The row filters of GET /v2/transactions beside the date range (docs/api.md, "Transaction filters"). */
export type TransactionFilters = {
  /** Any id of a chain (a transactionId or a purchaseId): the rows of that subscription or purchase. */
  transactionId?: string;
  purchaseId?: string;
  productId?: string;
  platform?: string;
  sandbox?: boolean;
};

export const TRANSACTION_FILTER_PARAMETERS = ['transactionId', 'purchaseId', 'productId', 'platform', 'sandbox'] as const;
export const MAX_ID_LENGTH = 1000;

const text = (name: string, value: unknown): string | undefined => {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new InvalidParameterError(name, `${name} must be given once`);
  if (value === '' || value.length > MAX_ID_LENGTH || value.includes('\u0000')) {
    throw new InvalidParameterError(name, `${name} must be 1 to ${MAX_ID_LENGTH} characters without NUL`);
  }
  return value;
};

export function parseTransactionFilters(query: Record<string, unknown>): TransactionFilters {
  const f: TransactionFilters = {};
  for (const name of ['transactionId', 'purchaseId', 'productId', 'platform'] as const) {
    const value = text(name, query[name]);
    if (value !== undefined) f[name] = value;
  }
  if (query.sandbox !== undefined) {
    if (query.sandbox !== 'true' && query.sandbox !== 'false') throw new InvalidParameterError('sandbox', 'sandbox must be true or false');
    f.sandbox = query.sandbox === 'true';
  }
  return f;
}

/** A chain id selects a handful of rows found by index; the other filters are answered from kept counts. */
export const hasChainFilter = (f: TransactionFilters) => f.transactionId !== undefined || f.purchaseId !== undefined;

/**
 * The platforms whose ids support staff paste without a prefix: the two stores whose notifications
 * the service maps itself (an Apple transaction id, a Google order id `GPA.x` as the consoles show them).
 */
const BARE_ID_PLATFORMS = ['apple', 'google'];

/**
 * The ids a chain-id value stands for: itself, and for a value without `<platform>:` (every stored id
 * has one), that value under each store's prefix. Exact ids only, so the lookups stay index probes.
 */
export const chainIdCandidates = (id: string): string[] => (id.includes(':') ? [id] : [id, ...BARE_ID_PLATFORMS.map((p) => `${p}:${id}`)]);

/**
 * WHERE conditions on read_model.transactions `t`, numbering parameters from `next`.
 * An id of a chain stands for the purchase it belongs to: the id itself as a purchaseId (an Apple
 * original transaction id, a Google order id GPA.x), or the purchaseId of the row it names (an Apple
 * renewal, a Google renewal order GPA.x..N); every row of that purchase matches (transactions_purchase_idx).
 */
export function transactionFilterConditions(f: TransactionFilters, next: number): { sql: string; params: unknown[]; key: string } {
  const params: unknown[] = [];
  const param = (value: unknown) => {
    params.push(value);
    return `$${next + params.length - 1}`;
  };
  const conditions: string[] = [];
  const keys: string[] = [];
  for (const name of ['transactionId', 'purchaseId'] as const) {
    const id = f[name];
    if (id === undefined) continue;
    const p = param(chainIdCandidates(id));
    conditions.push(
      `t.purchase_id IN (SELECT unnest(${p}::text[]) UNION ALL SELECT c.purchase_id FROM read_model.transactions c WHERE c.app_id = $1 AND c.transaction_id = ANY(${p}::text[]))`,
    );
    keys.push(name === 'transactionId' ? 't' : 'u');
  }
  if (f.productId !== undefined) {
    conditions.push(`t.product_id = ${param(f.productId)}`);
    keys.push('p');
  }
  if (f.platform !== undefined) {
    conditions.push(`t.platform = ${param(f.platform)}`);
    keys.push('f');
  }
  if (f.sandbox !== undefined) {
    // false: every row not marked sandbox (a row whose event did not say is counted as production)
    conditions.push(f.sandbox ? `t.sandbox IS TRUE` : `t.sandbox IS NOT TRUE`);
    keys.push(f.sandbox ? 'st' : 'sf');
  }
  return { sql: conditions.map((c) => ` AND ${c}`).join(''), params, key: keys.join('') };
}
