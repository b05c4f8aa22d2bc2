import { createSecretKey, randomBytes, randomUUID } from 'node:crypto';
import type { EventSink, SinkMessage } from '../../src/cli/event-sink.js';
import { storeEventSink } from '../../src/cli/event-sink.js';
import { accountTokenFor, rememberAccountToken, resolveAccountTokens } from '../../src/customers/account-tokens/account-tokens.js';
import { erasureKey } from '../../src/customers/erase-customer/erasure-hash.js';
import { googleSubscriptionEvents } from '../../src/store-notifications/google/google-to-events.js';
import { APP_LINK_PREFIX, yieldToAppLinks } from '../../src/customers/receipt-links/app-links.js';
import { linkEvent, project } from '../utils/events.js';
import { createTestDatabase, type TestDatabase } from '../utils/database.js';

// The account tokens against a real PostgreSQL: what Google sends back as obfuscatedExternalAccountId
// (and Apple as appAccountToken) names the user again, on the notification endpoints' publisher and
// on the imports' sink alike (docs/purchases.md, "Account tokens").
describe('account tokens (int: real PostgreSQL)', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('account_tokens');
  });
  afterAll(async () => {
    await db?.drop();
  });

  /** A SubscriptionPurchaseV2 as subscriptionsv2.get documents it, bought with the account token set by the app. */
  const subscription = (obfuscatedExternalAccountId: string) => ({
    kind: 'androidpublisher#subscriptionPurchaseV2',
    regionCode: 'US',
    startTime: '2026-11-01T10:00:00.000Z',
    subscriptionState: 'SUBSCRIPTION_STATE_ACTIVE',
    latestOrderId: 'GPA.3390-1234-5678-90123',
    acknowledgementState: 'ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED',
    externalAccountIdentifiers: { obfuscatedExternalAccountId },
    lineItems: [
      {
        productId: 'pro_monthly',
        expiryTime: '2026-12-01T10:00:00.000Z',
        autoRenewingPlan: { autoRenewEnabled: true },
        offerDetails: { basePlanId: 'monthly', offerTags: [] },
        latestSuccessfulOrderId: 'GPA.3390-1234-5678-90123',
      },
    ],
  });

  it("Google's obfuscatedExternalAccountId: the token this service derived names its user; a UUID it never made stays as it is", async () => {
    const token = await rememberAccountToken(db.dataSource, 'app-g', 'user-42');
    expect(token).toBe(accountTokenFor(await erasureKey(db.dataSource), 'app-g', 'user-42'));
    expect(token).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    // keyed: under another key (another installation's) the same name has another token
    expect(accountTokenFor(createSecretKey(randomBytes(64)), 'app-g', 'user-42')).not.toBe(token);
    const stranger = randomUUID();
    const mine = googleSubscriptionEvents('app-g', 'm-1', 'tok-1', subscription(token.toUpperCase()), new Date('2026-11-01T10:00:01Z'));
    const theirs = googleSubscriptionEvents('app-g', 'm-2', 'tok-2', subscription(stranger), new Date('2026-11-01T10:00:01Z'));
    const otherApp = googleSubscriptionEvents('app-h', 'm-3', 'tok-3', subscription(token), new Date('2026-11-01T10:00:01Z'));
    await resolveAccountTokens(db.dataSource, [...mine, ...theirs, ...otherApp]);
    expect(mine.map((e) => e.data.applicationUsername)).toEqual(mine.map(() => 'user-42'));
    expect(theirs.map((e) => e.data.applicationUsername)).toEqual(theirs.map(() => stranger));
    // tokens are per application: another app's events keep the UUID
    expect(otherApp.map((e) => e.data.applicationUsername)).toEqual(otherApp.map(() => token));
  });

  it("the imports' sink maps tokens before the events reach the log", async () => {
    const token = await rememberAccountToken(db.dataSource, 'app-g', 'importer@example.com');
    const sent: SinkMessage[] = [];
    const inner: EventSink = { send: async (messages) => void sent.push(...messages), close: async () => undefined, chunkBytes: 1 << 20 };
    const events = googleSubscriptionEvents('app-g', 'm-4', 'tok-4', subscription(token), new Date('2026-11-01T10:00:01Z'));
    await storeEventSink(db.dataSource, inner, { seal: false }).send(events.map((e) => ({ key: e.data.receiptId, value: Buffer.from(JSON.stringify(e)) })));
    expect(sent.map((m) => JSON.parse(m.value.toString('utf8')).data.applicationUsername)).toEqual(events.map(() => 'importer@example.com'));
  });

  it("a store's link yields to an app's: after a transfer, the store's stale link to the buyer is left out, the rest of what it says passes", async () => {
    const receiptId = 'google:tok-transfer';
    // POST /v2/purchases moved the receipt to "new-owner" (its link id is an app link's)
    await project(db.dataSource, [linkEvent({ app: 'app-g', id: `${APP_LINK_PREFIX}t1`, time: '2026-11-01T11:00:00Z', receiptId, user: 'new-owner' })]);
    const sent: SinkMessage[] = [];
    const inner: EventSink = { send: async (messages) => void sent.push(...messages), close: async () => undefined, chunkBytes: 1 << 20 };
    // Google's next state still names the buyer (obfuscatedExternalAccountId cannot be changed)
    const events = googleSubscriptionEvents('app-g', 'm-5', 'tok-transfer', subscription('buyer'), new Date('2026-11-01T12:00:00Z'));
    expect(events.map((e) => e.type)).toEqual(['transaction.updated', 'receipt.linked']);
    await storeEventSink(db.dataSource, inner, { seal: false }).send(events.map((e) => ({ key: e.data.receiptId, value: Buffer.from(JSON.stringify(e)) })));
    expect(sent.map((m) => JSON.parse(m.value.toString('utf8')).type)).toEqual(['transaction.updated']);
    // a receipt no app linked: the store's link passes
    const fresh = googleSubscriptionEvents('app-g', 'm-6', 'tok-fresh', subscription('buyer'), new Date('2026-11-01T12:00:00Z'));
    expect((await yieldToAppLinks(db.dataSource, fresh)).map((e) => e.type)).toEqual(['transaction.updated', 'receipt.linked']);
  });
});
