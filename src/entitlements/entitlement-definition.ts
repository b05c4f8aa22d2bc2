import { PLATFORM_ID } from '../events/event-schemas.js';

// What an entitlement definition may be (docs/entitlements.md), checked the same way for the API
// (PUT /v2/entitlements/{name}) and the CLI (entitlements set): one function, so both refuse the
// same input with the same message naming the field and the value at fault.

/** 1-64 characters: a letter or digit, then letters, digits, `_`, `.`, `-` (`pro`, `plus.yearly`, `max-2026`). */
export const ENTITLEMENT_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
export const ENTITLEMENT_NAME_MAX = 64;
/** The most products one entitlement lists. */
export const MAX_PRODUCTS_PER_ENTITLEMENT = 100;
const PRODUCT_ID = new RegExp(PLATFORM_ID.pattern);

export type EntitlementDefinition = { name: string; productIds: string[] };

/** A refusal: `field` is `name` or `productIds`, `message` names the value at fault. */
export class EntitlementDefinitionError extends Error {
  constructor(
    readonly field: 'name' | 'productIds',
    message: string,
  ) {
    super(message);
  }
}

/** At most 100 characters of a refused value, as JSON, so control characters show. */
const shown = (value: unknown) => {
  const text = typeof value === 'string' ? value : String(value);
  return JSON.stringify(text.length > 100 ? `${text.slice(0, 100)}…` : text);
};

/** The entitlement name of a request or a command line, or a refusal naming it. */
export function checkEntitlementName(name: unknown): string {
  if (typeof name !== 'string' || name === '') throw new EntitlementDefinitionError('name', 'the entitlement name must not be empty');
  if (name.length > ENTITLEMENT_NAME_MAX)
    throw new EntitlementDefinitionError('name', `the entitlement name ${shown(name)} is longer than ${ENTITLEMENT_NAME_MAX} characters`);
  if (!ENTITLEMENT_NAME.test(name))
    throw new EntitlementDefinitionError(
      'name',
      `the entitlement name ${shown(name)} must start with a letter or digit and hold only letters, digits, "_", "." and "-"`,
    );
  return name;
}

/**
 * The products of a definition: 1 to 100 distinct product ids in the stored form,
 * `<platform>:<product id>` (`apple:pro_monthly`, `google:pro_monthly`, `stripe:price_123`), as the
 * transactions' productId shows them. The first one at fault is named, with its position.
 */
export function checkProductIds(productIds: unknown): string[] {
  if (!Array.isArray(productIds)) throw new EntitlementDefinitionError('productIds', 'productIds must be a list of product ids');
  if (productIds.length === 0) throw new EntitlementDefinitionError('productIds', 'productIds must list at least one product id');
  if (productIds.length > MAX_PRODUCTS_PER_ENTITLEMENT)
    throw new EntitlementDefinitionError(
      'productIds',
      `productIds lists ${productIds.length} product ids; an entitlement takes at most ${MAX_PRODUCTS_PER_ENTITLEMENT}`,
    );
  const seen = new Set<string>();
  productIds.forEach((id: unknown, i) => {
    if (typeof id !== 'string')
      throw new EntitlementDefinitionError('productIds', `productIds[${i}] must be a string, not ${id === null ? 'null' : typeof id}`);
    if (id.length < PLATFORM_ID.minLength || id.length > PLATFORM_ID.maxLength || !PRODUCT_ID.test(id) || /\p{Cc}/u.test(id))
      throw new EntitlementDefinitionError(
        'productIds',
        `productIds[${i}] ${shown(id)} is not a product id: <platform>:<product id> as transactions show it (apple:pro_monthly, google:pro_monthly, stripe:price_123), ${PLATFORM_ID.minLength}-${PLATFORM_ID.maxLength} characters`,
      );
    // a lone surrogate would be stored as U+FFFD: the definition read back would differ, and match no transaction
    if (!id.isWellFormed()) throw new EntitlementDefinitionError('productIds', `productIds[${i}] holds a lone UTF-16 surrogate (not Unicode text)`);
    if (seen.has(id)) throw new EntitlementDefinitionError('productIds', `productIds[${i}] ${shown(id)} is listed twice`);
    seen.add(id);
  });
  return productIds as string[];
}

/** A whole definition, name first. */
export function checkEntitlementDefinition(name: unknown, productIds: unknown): EntitlementDefinition {
  return { name: checkEntitlementName(name), productIds: checkProductIds(productIds) };
}
