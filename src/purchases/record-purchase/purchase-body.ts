import { InvalidParameterError } from '../../common/errors.js';

/** What an app (or its backend) hands over: one purchase, in one of the forms its store's SDK gives. */
export type PurchaseSource =
  /** StoreKit 2: Transaction.jwsRepresentation, verified here against APPLE_ROOT_CERTIFICATES. */
  | { platform: 'apple'; signedTransaction: string }
  /** Any App Store transaction id: the history is read from the App Store Server API. */
  | { platform: 'apple'; transactionId: string }
  /** StoreKit 1: the app receipt (base64); Apple's ReceiptUtility finds a transaction id in it. */
  | { platform: 'apple'; appReceipt: string }
  /** Play Billing: Purchase.getPurchaseToken(), with the product id for a one-time product. */
  | { platform: 'google'; purchaseToken: string; productId?: string };

export type PurchaseRequest = { source: PurchaseSource; applicationUsername?: string };

/** The largest StoreKit 1 app receipt taken, base64 (receipts of long histories run to a few hundred KB). */
export const APP_RECEIPT_MAX_CHARS = 480_000;
const JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
const JWS_MAX_CHARS = 32_768;
const TRANSACTION_ID = /^\d{1,30}$/;
const BASE64 = /^[A-Za-z0-9+/\r\n]+={0,2}\s*$/;
const TOKEN = /^[A-Za-z0-9._\-:~+/=]{1,1024}$/;
const PRODUCT_ID = /^[a-z0-9][a-z0-9._]{0,148}$/i;
/** The event contract's bound on a username (event-schemas.ts), in UTF-8 bytes. */
export const USERNAME_MAX_BYTES = 512;

const FIELDS = ['platform', 'applicationUsername', 'signedTransaction', 'transactionId', 'appReceipt', 'purchaseToken', 'productId'] as const;
const SOURCES = ['signedTransaction', 'transactionId', 'appReceipt', 'purchaseToken'] as const;

/** A username the log can carry: 1-512 UTF-8 bytes, no control characters. */
export function usernameProblem(name: unknown): string | undefined {
  if (typeof name !== 'string' || name === '') return 'must be a non-empty string';
  if (Buffer.byteLength(name) > USERNAME_MAX_BYTES) return `must be at most ${USERNAME_MAX_BYTES} UTF-8 bytes`;
  if (/\p{Cc}/u.test(name)) return 'must not hold control characters';
  return undefined;
}

/**
 * The body of POST /v2/purchases, checked: a JSON object with exactly one of signedTransaction,
 * transactionId, appReceipt or purchaseToken; platform, when given, must agree with it. Every
 * refusal names the field.
 */
export function parsePurchaseBody(body: unknown): PurchaseRequest {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new InvalidParameterError('body', 'the body must be a JSON object such as {"signedTransaction": "...", "applicationUsername": "..."}');
  const b = body as Record<string, unknown>;
  for (const key of Object.keys(b))
    if (!(FIELDS as readonly string[]).includes(key)) throw new InvalidParameterError(key, `unknown field "${key.slice(0, 100)}"; known: ${FIELDS.join(', ')}`);
  const given = SOURCES.filter((f) => b[f] !== undefined);
  if (given.length !== 1)
    throw new InvalidParameterError(
      given[1] ?? 'body',
      given.length === 0 ? `give one of ${SOURCES.join(', ')}` : `give one of ${SOURCES.join(', ')}, not ${given.join(' and ')}`,
    );
  const field = given[0];
  const value = b[field];
  if (typeof value !== 'string' || value === '') throw new InvalidParameterError(field, `${field} must be a non-empty string`);
  const platform = field === 'purchaseToken' ? 'google' : 'apple';
  if (b.platform !== undefined && b.platform !== platform) {
    const known = b.platform === 'apple' || b.platform === 'google';
    throw new InvalidParameterError(
      'platform',
      known ? `${field} is ${platform === 'apple' ? 'an App Store' : 'a Google Play'} field, not ${String(b.platform)}` : 'platform must be apple or google',
    );
  }
  if (b.productId !== undefined && field !== 'purchaseToken') throw new InvalidParameterError('productId', 'productId goes with a Google purchaseToken only');
  let applicationUsername: string | undefined;
  if (b.applicationUsername !== undefined) {
    const wrong = usernameProblem(b.applicationUsername);
    if (wrong) throw new InvalidParameterError('applicationUsername', `applicationUsername ${wrong}`);
    applicationUsername = b.applicationUsername as string;
  }
  return { source: source(field, value, b.productId), applicationUsername };
}

function source(field: (typeof SOURCES)[number], value: string, productId: unknown): PurchaseSource {
  switch (field) {
    case 'signedTransaction':
      if (value.length > JWS_MAX_CHARS || !JWS.test(value))
        throw new InvalidParameterError(field, 'signedTransaction must be a JWS (Transaction.jwsRepresentation): three base64url parts joined by dots');
      return { platform: 'apple', signedTransaction: value };
    case 'transactionId':
      if (!TRANSACTION_ID.test(value)) throw new InvalidParameterError(field, 'transactionId must be an App Store transaction id (decimal digits)');
      return { platform: 'apple', transactionId: value };
    case 'appReceipt':
      if (value.length > APP_RECEIPT_MAX_CHARS || !BASE64.test(value))
        throw new InvalidParameterError(field, `appReceipt must be the app receipt in base64, at most ${APP_RECEIPT_MAX_CHARS} characters`);
      return { platform: 'apple', appReceipt: value };
    case 'purchaseToken': {
      if (!TOKEN.test(value))
        throw new InvalidParameterError(field, 'purchaseToken is not a Google purchase token (letters, digits and ._-:~+/= only, at most 1024)');
      if (productId !== undefined && (typeof productId !== 'string' || !PRODUCT_ID.test(productId)))
        throw new InvalidParameterError('productId', 'productId must be a Play product id');
      return { platform: 'google', purchaseToken: value, productId: productId as string | undefined };
    }
  }
}
