import type { HistorySpec, PurchaseSpec } from './lifecycle-generator.js';

// Fixed histories that always run before the generated ones: the scenarios the lifecycle issue
// listed, and every failing case a generated run has found (its spec as fast-check reported it).

const monthly = (over: Partial<PurchaseSpec>): PurchaseSpec => ({
  platform: 'apple',
  product: 'monthly',
  startDay: 10,
  link: 'implicit',
  trial: false,
  pending: 'no',
  sandbox: false,
  steps: [],
  ...over,
});

export const REGRESSION_HISTORIES: { name: string; spec: HistorySpec; arrival: number; batchSizes: number[] }[] = [
  {
    name: 'renewals filed at their own charge date; a refunded yearly beside an active monthly',
    spec: {
      customers: [
        { user: 0, app: 0, purchases: [monthly({ steps: ['renew', 'renew', 'lapse'] }), monthly({ product: 'yearly', startDay: 5, steps: ['refund'] })] },
      ],
      redeliver: [1, 3],
    },
    arrival: 7,
    batchSizes: [2, 1],
  },
  {
    name: 'upgrade and replacement on both stores, pending that stays and pending that completes',
    spec: {
      customers: [
        {
          user: 1,
          app: 0,
          purchases: [monthly({ product: 'yearly', steps: ['upgrade', 'renew'] }), monthly({ platform: 'google', steps: ['replaced-by-reason'] })],
        },
        { user: 2, app: 1, purchases: [monthly({ pending: 'stays' }), monthly({ pending: 'completed', product: 'coins' })] },
      ],
      redeliver: [],
    },
    arrival: 3,
    batchSizes: [1],
  },
  {
    name: 'issue 21: an upgrade is a new transaction of the same subscription; the old one is replaced whichever arrives first; a downgrade at the renewal replaces nothing',
    spec: {
      customers: [
        {
          user: 0,
          app: 0,
          purchases: [
            monthly({ product: 'yearly', steps: ['upgrade-new-transaction', 'renew'] }),
            monthly({ startDay: 30, steps: ['downgrade-at-renewal', 'upgrade-new-transaction'] }),
          ],
        },
        { user: 1, app: 0, purchases: [monthly({ product: 'yearly', link: 'none', steps: ['upgrade-new-transaction', 'move-transaction'] })] },
      ],
      redeliver: [2],
    },
    arrival: 13,
    batchSizes: [1, 3],
  },
  {
    name: 'the same, in the order it happened, one event per batch',
    spec: { customers: [{ user: 0, app: 0, purchases: [monthly({ product: 'yearly', steps: ['upgrade-new-transaction', 'lapse'] })] }], redeliver: [] },
    arrival: 0,
    batchSizes: [1],
  },
  {
    name: 'grace period, billing retry without grace, early expiry',
    spec: {
      customers: [
        {
          user: 0,
          app: 0,
          purchases: [monthly({ steps: ['renew', 'billing-retry'] }), monthly({ startDay: 200, steps: ['billing-retry-no-grace', 'recovered'] })],
        },
        { user: 3, app: 0, purchases: [monthly({ steps: ['expire-early'] })] },
      ],
      redeliver: [0],
    },
    arrival: 11,
    batchSizes: [3, 5],
  },
  {
    name: 'a transaction moving between receipts refreshes the previous owner; restores are not undone by later renewals',
    spec: {
      customers: [
        { user: 0, app: 0, purchases: [monthly({ steps: ['move-transaction'] })] },
        { user: 1, app: 0, purchases: [monthly({ startDay: 40, link: 'explicit' })] },
        { user: 2, app: 0, purchases: [monthly({ steps: ['restore', 'renewal-with-original-user', 'renew'] })] },
      ],
      redeliver: [],
    },
    arrival: 5,
    batchSizes: [1, 2],
  },
  {
    name: 'the same, arriving in the order it happened: the moved transaction leaves its first owner',
    spec: {
      customers: [
        { user: 1, app: 0, purchases: [monthly({ startDay: 5, link: 'explicit' })] },
        { user: 0, app: 0, purchases: [monthly({ steps: ['move-transaction'] })] },
      ],
      redeliver: [],
    },
    arrival: 0,
    batchSizes: [1],
  },
  {
    name: 'corrected purchase dates and stale snapshots re-file rows; consumables never subscribe',
    spec: {
      customers: [
        {
          user: 4,
          app: 1,
          purchases: [
            monthly({ steps: ['correct-date', 'stale-snapshot', 'renew'] }),
            monthly({ product: 'lifetime', link: 'explicit', steps: ['refund', 'stale-snapshot'] }),
          ],
        },
      ],
      redeliver: [2],
    },
    arrival: 9,
    batchSizes: [4],
  },
  {
    // issue 24: each status reached by one customer, asked at its boundaries (grace start, grace end,
    // access end, refund) by the statusInstants of the model
    name: 'statuses: in grace, in billing retry without grace, refunded, lapsed, pending only, on both stores',
    spec: {
      customers: [
        { user: 0, app: 0, purchases: [monthly({ steps: ['renew', 'billing-retry'] })] },
        { user: 1, app: 0, purchases: [monthly({ platform: 'google', startDay: 30, steps: ['billing-retry-no-grace'] })] },
        { user: 2, app: 0, purchases: [monthly({ startDay: 20, steps: ['renew', 'refund'] })] },
        { user: 3, app: 1, purchases: [monthly({ product: 'yearly', steps: ['lapse'] }), monthly({ platform: 'google', pending: 'stays', startDay: 50 })] },
        { user: 4, app: 1, purchases: [monthly({ platform: 'google', pending: 'stays', sandbox: true })] },
      ],
      redeliver: [0],
    },
    arrival: 5,
    batchSizes: [2, 7],
  },
  {
    // issue 23: erasures by name and by hash; one at the exact time of an event naming the customer
    // (at or before: that event names no one); a re-signup 1 ms and a day later, a restore of the
    // first receipt after the erasure; a second erasure forgetting the re-signup between the two
    name: 'erasures: exact-time edge, hashed, re-signup by purchase and by restore, erased twice',
    spec: {
      customers: [
        { user: 0, app: 0, purchases: [monthly({ steps: ['renew', 'renewal-with-original-user'] }), monthly({ startDay: 300, link: 'explicit' })] },
        { user: 1, app: 0, purchases: [monthly({ steps: ['restore', 'renew'] }), monthly({ platform: 'google', startDay: 60 })] },
        { user: 2, app: 1, purchases: [monthly({ product: 'yearly', steps: ['billing-retry'] })] },
      ],
      redeliver: [4],
      erasures: [
        { user: 0, app: 0, day: 45, exact: null, hashed: false, resignup: 'purchase-1ms' },
        { user: 0, app: 0, day: 200, exact: null, hashed: true, resignup: 'none' },
        { user: 1, app: 0, day: 0, exact: 1, hashed: true, resignup: 'relink' },
        { user: 2, app: 1, day: 0, exact: 0, hashed: false, resignup: 'purchase' },
      ],
    },
    arrival: 17,
    batchSizes: [3, 1, 2],
  },
  {
    // issue 23: the edge of "at or before": the customer's first event is dated exactly at the
    // erasure and arrives after it (a later batch), behind their later billing-retry snapshot; it
    // still names no one, and, as the earliest implicit link, leaves the receipt without owner
    name: 'erasure dated exactly at an event that arrives after it',
    spec: {
      customers: [{ user: 2, app: 1, purchases: [monthly({ product: 'yearly', steps: ['billing-retry'] })] }],
      redeliver: [],
      erasures: [{ user: 2, app: 1, day: 0, exact: 0, hashed: false, resignup: 'purchase' }],
    },
    arrival: 1,
    batchSizes: [1],
  },
  {
    name: 'entitlements: upgrades on both stores (a Google one cut short by its new purchase token), lifetime refunded or said expired, consumed coins, grace and billing retry, then definitions changed',
    spec: {
      customers: [
        {
          user: 0,
          app: 0,
          purchases: [
            monthly({ platform: 'google', steps: ['upgrade', 'renew'] }),
            monthly({ product: 'lifetime', steps: ['refund'] }),
            monthly({ platform: 'google', product: 'lifetime', startDay: 20, steps: ['expire-early'] }),
          ],
        },
        {
          user: 1,
          app: 0,
          purchases: [
            monthly({ product: 'yearly', steps: ['upgrade-new-transaction'] }),
            monthly({ platform: 'google', product: 'coins' }),
            monthly({ startDay: 90, steps: ['billing-retry'] }),
          ],
        },
        {
          user: 2,
          app: 0,
          purchases: [
            monthly({ platform: 'google', steps: ['replaced-by-reason'] }),
            monthly({ product: 'yearly', startDay: 5, steps: ['billing-retry-no-grace'] }),
          ],
        },
      ],
      redeliver: [2],
      definitions: [
        {
          app: 0,
          initial: [
            { name: 'pro', products: ['google:monthly', 'apple:monthly'] },
            { name: 'lifetime.v1', products: ['apple:lifetime', 'google:lifetime', 'google:coins'] },
            { name: 'Pro', products: ['google:yearly', 'apple:plus', 'apple:yearly'] },
          ],
          changes: [
            { name: 'pro', products: ['google:yearly', 'google:monthly', 'apple:plus'] },
            { name: 'lifetime.v1', products: null },
            { name: 'max-2', products: ['apple:monthly'] },
            { name: 'plus', products: null },
          ],
        },
        { app: 1, initial: [], changes: [{ name: 'pro', products: ['apple:monthly'] }] },
      ],
    },
    arrival: 3,
    batchSizes: [3, 1],
  },
  {
    // docs/entitlements.md: "cut short when a subscription not replaced started after it", a
    // subscription starting when it was bought (purchaseDate): the renewal of an older, unrelated
    // subscription charged between the two does not cut the grant short.
    name: 'entitlements: a subscription replaced by its flags is not cut short by the renewal of an older, unrelated subscription',
    spec: {
      customers: [
        {
          user: 0,
          app: 0,
          purchases: [monthly({ platform: 'google', startDay: 100, steps: ['replaced-by-reason'] }), monthly({ startDay: 80, steps: ['renew'] })],
        },
      ],
      redeliver: [],
      definitions: [
        { app: 0, initial: [{ name: 'pro', products: ['google:monthly'] }], changes: [{ name: 'pro', products: ['google:monthly', 'apple:unsold'] }] },
      ],
    },
    arrival: 0,
    batchSizes: [],
  },
  {
    // Found by seed 236429118 (MODEL_RUNS=60), when the service cut short every replaced transaction:
    // an Apple yearly replaced by another transaction of its own subscription (a crossgrade to plus,
    // rule 2, not by its own flags) grants until that replacement, whatever the customer's
    // unrelated, older Google yearly's renewal does.
    name: 'an Apple yearly replaced by its crossgrade keeps its grant until then, whatever an unrelated Google renewal does',
    spec: {
      customers: [
        {
          user: 1,
          app: 0,
          purchases: [
            monthly({ platform: 'google', product: 'yearly', startDay: 14, steps: ['renewal-with-original-user'] }),
            monthly({ product: 'yearly', startDay: 312, steps: ['upgrade-new-transaction'] }),
          ],
        },
      ],
      redeliver: [],
      definitions: [{ app: 0, initial: [{ name: 'pro', products: ['apple:yearly'] }], changes: [] }],
    },
    arrival: 0,
    batchSizes: [],
  },
];
