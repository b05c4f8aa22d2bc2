import { ENTITLEMENT_NAME_MAX } from './entitlement-definition.js';

/** An entitlement as GET and PUT /v2/entitlements answer it. */
export type EntitlementView = { identifier: string; productIds: string[] };

export const entitlementSchema = {
  type: 'object',
  required: ['identifier', 'productIds'],
  properties: {
    identifier: { type: 'string', description: `The entitlement's name (1-${ENTITLEMENT_NAME_MAX} characters: letters, digits, _ . -)` },
    productIds: {
      type: 'array',
      items: { type: 'string' },
      description: 'The products that grant it, as transactions show them (<platform>:<product id>), in byte order',
    },
  },
} as const;
