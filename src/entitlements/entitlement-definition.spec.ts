import { checkEntitlementDefinition, checkEntitlementName, checkProductIds, EntitlementDefinitionError } from './entitlement-definition.js';

// The one validation the API (400) and the CLI (exit 2) share: each refusal names the field and the value.

const refusal = (check: () => unknown) => {
  try {
    check();
  } catch (error) {
    if (error instanceof EntitlementDefinitionError) return { field: error.field, message: error.message };
    throw error;
  }
  throw new Error('accepted');
};

describe('entitlement definitions', () => {
  it('takes a name and distinct product ids in the stored <platform>:<id> form, as given', () => {
    expect(checkEntitlementDefinition('pro', ['apple:pro_monthly', 'google:pro_monthly', 'stripe:price_1Abc'])).toEqual({
      name: 'pro',
      productIds: ['apple:pro_monthly', 'google:pro_monthly', 'stripe:price_1Abc'],
    });
    expect(checkEntitlementName('Plus.yearly-2026_b')).toBe('Plus.yearly-2026_b');
    expect(checkEntitlementName('x'.repeat(64))).toBe('x'.repeat(64));
    // any platform the event contract takes, and Google's dotted product ids
    expect(checkProductIds(['amazon:com.example.pro', 'google:com.example.pro.monthly'])).toHaveLength(2);
  });

  it.each([
    ['', 'the entitlement name must not be empty'],
    ['x'.repeat(65), `the entitlement name "${'x'.repeat(65)}" is longer than 64 characters`],
    ['pro plus', 'the entitlement name "pro plus" must start with a letter or digit and hold only letters, digits, "_", "." and "-"'],
    ['-pro', 'the entitlement name "-pro" must start with a letter or digit and hold only letters, digits, "_", "." and "-"'],
    ['pró', 'the entitlement name "pró" must start with a letter or digit and hold only letters, digits, "_", "." and "-"'],
    ['a/b', 'the entitlement name "a/b" must start with a letter or digit and hold only letters, digits, "_", "." and "-"'],
  ])('refuses the name %j, naming it', (name, message) => {
    expect(refusal(() => checkEntitlementDefinition(name, ['apple:pro']))).toEqual({ field: 'name', message });
  });

  it.each([
    [[], 'productIds must list at least one product id'],
    ['apple:pro', 'productIds must be a list of product ids'],
    [['apple:pro', 7], 'productIds[1] must be a string, not number'],
    [['apple:pro', null], 'productIds[1] must be a string, not null'],
    [
      ['apple:pro', 'pro_monthly'],
      'productIds[1] "pro_monthly" is not a product id: <platform>:<product id> as transactions show it (apple:pro_monthly, google:pro_monthly, stripe:price_123), 3-512 characters',
    ],
    [
      ['apple:'],
      'productIds[0] "apple:" is not a product id: <platform>:<product id> as transactions show it (apple:pro_monthly, google:pro_monthly, stripe:price_123), 3-512 characters',
    ],
    [
      ['ap ple:pro'],
      'productIds[0] "ap ple:pro" is not a product id: <platform>:<product id> as transactions show it (apple:pro_monthly, google:pro_monthly, stripe:price_123), 3-512 characters',
    ],
    [
      ['apple:pro\u0000x'],
      'productIds[0] "apple:pro\\u0000x" is not a product id: <platform>:<product id> as transactions show it (apple:pro_monthly, google:pro_monthly, stripe:price_123), 3-512 characters',
    ],
    [['apple:pro', 'google:pro', 'apple:pro'], 'productIds[2] "apple:pro" is listed twice'],
    [['apple:pro', 'apple:pro\ud800'], 'productIds[1] holds a lone UTF-16 surrogate (not Unicode text)'],
    [Array.from({ length: 101 }, (_, i) => `apple:p${i}`), 'productIds lists 101 product ids; an entitlement takes at most 100'],
  ])('refuses the products %j, naming the one at fault', (productIds, message) => {
    expect(refusal(() => checkEntitlementDefinition('pro', productIds))).toEqual({ field: 'productIds', message });
  });

  it('takes 100 products, and a product id of 512 characters but not 513', () => {
    expect(checkProductIds(Array.from({ length: 100 }, (_, i) => `apple:p${i}`))).toHaveLength(100);
    expect(checkProductIds([`apple:${'p'.repeat(506)}`])).toHaveLength(1);
    expect(refusal(() => checkProductIds([`apple:${'p'.repeat(507)}`])).field).toBe('productIds');
  });
});
