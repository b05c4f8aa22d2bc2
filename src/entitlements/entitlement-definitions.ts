import type { DataSource } from 'typeorm';
import { entitlementDefinitionsSql as sql } from './entitlement-definitions.sql.js';
import { EntitlementDefinitionError, type EntitlementDefinition } from './entitlement-definition.js';

// Reading and changing an application's entitlement definitions, for the API and the CLI alike.
// Definitions are configuration kept in public.entitlement_products, applied when customers are
// read (docs/entitlements.md): a change takes effect at the next read, for the whole history.

/** The most entitlements one application defines. */
export const MAX_ENTITLEMENTS_PER_APP = 100;

export async function listEntitlements(db: DataSource, appId: string): Promise<EntitlementDefinition[]> {
  return db.query(sql.list, [appId]);
}

/**
 * Makes `definition` the application's entitlement of that name, replacing what it listed before.
 * `created`: the name was not defined before.
 */
export async function defineEntitlement(db: DataSource, appId: string, definition: EntitlementDefinition): Promise<{ created: boolean }> {
  return db.transaction(async (m) => {
    await m.query(sql.lock, [appId]);
    const [{ entitlements, exists }] = (await m.query(sql.count, [appId, definition.name])) as { entitlements: number; exists: boolean }[];
    if (!exists && entitlements >= MAX_ENTITLEMENTS_PER_APP)
      throw new EntitlementDefinitionError('name', `the application defines ${entitlements} entitlements already, the most it may; remove one first`);
    await m.query(sql.replace, [appId, definition.name, definition.productIds]);
    return { created: !exists };
  });
}

/** Removes the named entitlement; false when the application did not define it. */
export async function removeEntitlement(db: DataSource, appId: string, name: string): Promise<boolean> {
  return db.transaction(async (m) => {
    await m.query(sql.lock, [appId]);
    const [{ removed }] = (await m.query(sql.remove, [appId, name])) as { removed: number }[];
    return removed > 0;
  });
}
