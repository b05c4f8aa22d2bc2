import { ENTITLEMENTS_LOCK_SPACE } from '../database/advisory-locks.js';

// The statements behind the entitlement definitions (public.entitlement_products): the API and the
// CLI both go through entitlement-definitions.ts.

export const entitlementDefinitionsSql = {
  /** An application's entitlements, each with its products, by name (byte order). */
  list: `
    SELECT entitlement AS name, array_agg(product_id ORDER BY product_id COLLATE "C") AS "productIds"
    FROM public.entitlement_products WHERE app_id = $1
    GROUP BY entitlement ORDER BY entitlement COLLATE "C"`,

  /** One writer of an application's definitions at a time, until its transaction ends. */
  lock: `SELECT pg_advisory_xact_lock(${ENTITLEMENTS_LOCK_SPACE}, hashtext($1))`,

  /** How many entitlements the application defines, and whether $2 is one of them. */
  count: `
    SELECT count(DISTINCT entitlement)::int AS entitlements, coalesce(bool_or(entitlement = $2), false) AS exists
    FROM public.entitlement_products WHERE app_id = $1`,

  /** Replaces entitlement $2's products with $3: those not listed go, the new ones come. */
  replace: `
    WITH gone AS (
      DELETE FROM public.entitlement_products WHERE app_id = $1 AND entitlement = $2 AND product_id <> ALL($3::text[]) RETURNING product_id
    ), added AS (
      INSERT INTO public.entitlement_products (app_id, entitlement, product_id)
      SELECT $1, $2, p FROM unnest($3::text[]) AS p ON CONFLICT DO NOTHING RETURNING product_id
    )
    SELECT (SELECT count(*) FROM gone)::int AS removed, (SELECT count(*) FROM added)::int AS added`,

  /** Removes entitlement $2; the number of products it listed (0: it did not exist). */
  remove: `
    WITH gone AS (DELETE FROM public.entitlement_products WHERE app_id = $1 AND entitlement = $2 RETURNING product_id)
    SELECT count(*)::int AS removed FROM gone`,
};
