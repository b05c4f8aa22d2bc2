// Loopback stores for bench/import.mjs, answering in the shapes of test/utils/apple-store-mock.ts
// and google-play-mock.ts (which are TypeScript importing src/ and cannot be loaded by plain node).
// They do not check the callers' credentials (the test mocks do); the App Store answers are signed by
// a throwaway test CA (the project's apple-test-ca, from dist/), so the CLI verifies them for real.
import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import { createServer } from 'node:http';
import { createAppleTestCa, signAppleJws } from '../dist/store-notifications/apple/apple-test-ca.js';

const DAY = 86_400_000;
const listen = (server) => new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${server.address().port}`)));
const json = (res, status, body) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

/** The App Store Server API: `customers` lines, each a monthly chain of `perCustomer` transactions (ids `${i}00..`). */
export async function startAppleMock({ bundleId, customers, perCustomer }) {
  const ca = await createAppleTestCa();
  const now = Date.now();
  const chain = (i) => {
    const original = String(1_000_000_000 + i * 100);
    const first = now - (perCustomer - 1) * 30 * DAY - 5 * DAY;
    return Array.from({ length: perCustomer }, (_, k) => ({
      transactionId: k === 0 ? original : String(Number(original) + k),
      originalTransactionId: original,
      productId: 'pro_monthly',
      purchaseDate: first + k * 30 * DAY,
      originalPurchaseDate: first,
      expiresDate: first + (k + 1) * 30 * DAY,
      type: 'Auto-Renewable Subscription',
      quantity: 1,
      inAppOwnershipType: 'PURCHASED',
      transactionReason: k === 0 ? 'PURCHASE' : 'RENEWAL',
      price: 4990,
      currency: 'USD',
      appAccountToken: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    }));
  };
  const signedDate = now - 60_000;
  const sign = (p) => signAppleJws(ca, { ...p, bundleId, environment: 'Sandbox', signedDate });
  const customerOf = (id) => {
    const n = Number(id) - 1_000_000_000;
    const i = Math.floor(n / 100);
    return i >= 0 && i < customers && n % 100 < perCustomer ? chain(i) : undefined;
  };
  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    const history = /^\/inApps\/v2\/history\/(\d+)$/.exec(url.pathname);
    const subs = /^\/inApps\/v1\/subscriptions\/(\d+)$/.exec(url.pathname);
    const all = customerOf((history ?? subs)?.[1]);
    if (!all) return json(res, 404, { errorCode: 4040010, errorMessage: 'Transaction id not found.' });
    if (history) {
      const from = Number(url.searchParams.get('revision') ?? '0');
      const page = all.slice(from, from + 20);
      return json(res, 200, { revision: String(from + page.length), hasMore: from + page.length < all.length, bundleId, environment: 'Sandbox', signedTransactions: page.map(sign) });
    }
    const last = all.at(-1);
    json(res, 200, { environment: 'Sandbox', bundleId, data: [{ subscriptionGroupIdentifier: 'group-1', lastTransactions: [{ status: 1, originalTransactionId: last.originalTransactionId, signedTransactionInfo: sign(last), signedRenewalInfo: sign({ originalTransactionId: last.originalTransactionId, productId: last.productId, autoRenewProductId: last.productId, autoRenewStatus: 1 }) }] }] });
  });
  const key = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' });
  return {
    base: await listen(server),
    rootPem: new X509Certificate(ca.root).toString(),
    privateKeyPem: key,
    lines: Array.from({ length: customers }, (_, i) => String(1_000_000_000 + i * 100 + (i % perCustomer))),
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** The Play Developer API: purchases.subscriptionsv2.get for tokens `bench-<i>`, each a subscription renewed `i % 5` times. */
export async function startGoogleMock({ customers }) {
  const now = Date.now();
  const server = createServer((req, res) => {
    const m = /^\/androidpublisher\/v3\/applications\/[^/]+\/purchases\/subscriptionsv2\/tokens\/bench-(\d+)$/.exec(new URL(req.url, 'http://x').pathname);
    const i = m ? Number(m[1]) : -1;
    if (!(i >= 0 && i < customers)) return json(res, 404, { error: { code: 404, message: 'The purchase token was not found.', status: 'NOT_FOUND' } });
    const order = `GPA.3300-0000-0000-${String(i).padStart(5, '0')}${i % 5 ? `..${(i % 5) - 1}` : ''}`;
    json(res, 200, {
      kind: 'androidpublisher#subscriptionPurchaseV2',
      regionCode: 'DE',
      startTime: new Date(now - 40 * DAY).toISOString(),
      subscriptionState: 'SUBSCRIPTION_STATE_ACTIVE',
      latestOrderId: order,
      acknowledgementState: 'ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED',
      externalAccountIdentifiers: { obfuscatedExternalAccountId: `user-${i}` },
      lineItems: [{ productId: 'pro_monthly', expiryTime: new Date(now + 20 * DAY).toISOString(), autoRenewingPlan: { autoRenewEnabled: true, recurringPrice: { currencyCode: 'EUR', units: '4', nanos: 990000000 } }, offerDetails: { basePlanId: 'monthly', offerTags: [] }, latestSuccessfulOrderId: order }],
    });
  });
  const account = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    base: await listen(server),
    serviceAccountKey: JSON.stringify({ type: 'service_account', project_id: 'bench', private_key_id: 'bench-1', private_key: account.privateKey.export({ format: 'pem', type: 'pkcs8' }), client_email: 'bench@bench.iam.gserviceaccount.com', client_id: '1', token_uri: 'https://oauth2.googleapis.com/token' }),
    lines: Array.from({ length: customers }, (_, i) => `bench-${i}`),
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}
