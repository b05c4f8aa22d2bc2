import { Ajv, type ValidateFunction, type ErrorObject } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { EVENT_SCHEMAS, TRANSACTION_FIELDS } from './event-schemas.js';
import { normalizeTime } from './event-time.js';
import type { PurchaseEvent, TransactionSnapshot } from './purchase-event.js';

/** Why an event cannot be projected; each one sends the message to the dead letters. */
export enum RejectCode {
  NotJson = 'not_json',
  UnknownType = 'unknown_type',
  SchemaViolation = 'schema_violation',
  BadIdentifier = 'bad_identifier',
  /** Valid JSON and schema, but PostgreSQL could not store it (NUL, unpaired surrogate, year outside 0001-9999, over-long key). */
  Unstorable = 'unstorable_value',
  /** `time` further in the future than the allowed clock skew: it would win every later update. */
  FutureTime = 'future_time',
  /** PostgreSQL refused the event when it was projected; found by splitting the batch. */
  ProjectionFailed = 'projection_failed',
  /** Value and key over EVENT_MAX_BYTES: refused unread, so no single message can exhaust the consumer's memory. */
  TooLarge = 'too_large',
}

export type DecodeOptions = {
  /** When the log received the message (epoch ms): what `time` is compared with, so replays decide alike. */
  receivedAt?: number;
  /** How far `time` may be ahead of receivedAt; default 1 day. */
  maxFutureSkewMs?: number;
};

export const DEFAULT_MAX_FUTURE_SKEW_MS = 86_400_000;

/** UTF-8 bytes an identifier or username may take: every index entry stays far below PostgreSQL's 2704-byte limit. */
const MAX_KEY_BYTES = 512;
const MAX_APP_BYTES = 200;

export type Decoded = { ok: true; event: PurchaseEvent } | { ok: false; code: RejectCode; reason: string };

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
const ajv = addFormats(new Ajv({ allErrors: false, strict: true, allowUnionTypes: true }));
const validators: Record<string, ValidateFunction> = Object.fromEntries(Object.entries(EVENT_SCHEMAS).map(([type, schema]) => [type, ajv.compile(schema)]));

const DATE_FIELDS = [
  'purchaseDate',
  'lastRenewalDate',
  'renewalDate',
  'expirationDate',
  'renewalIntentChangeDate',
  'gracePeriodExpirationDate',
  'revocationDate',
] as const;

/** Parses and validates one message value. Pure: same bytes and options, same answer. */
export function decodeEvent(value: Buffer | string | null, options: DecodeOptions = {}): Decoded {
  if (value === null) return { ok: false, code: RejectCode.NotJson, reason: 'message has no value' };
  const text = typeof value === 'string' ? value : value.toString('utf8');
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    return { ok: false, code: RejectCode.NotJson, reason: `not JSON: ${(error as Error).message}` };
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return { ok: false, code: RejectCode.SchemaViolation, reason: 'event must be a JSON object' };
  }
  const type = (raw as { type?: unknown }).type;
  const validate = typeof type === 'string' ? validators[type] : undefined;
  if (!validate) {
    return {
      ok: false,
      code: RejectCode.UnknownType,
      reason: `unknown event type ${JSON.stringify(type)}; expected one of ${Object.keys(validators).join(', ')}`,
    };
  }
  if (!validate(raw)) {
    const code = validate.errors?.some(isIdentifierError) ? RejectCode.BadIdentifier : RejectCode.SchemaViolation;
    return { ok: false, code, reason: describe(validate.errors) };
  }
  // In valid JSON text a NUL or a lone surrogate can only arrive as a \u escape: without one, skip the walk.
  const unstorable = text.includes('\\u') ? findUnstorable(raw, '') : undefined;
  if (unstorable) return { ok: false, code: RejectCode.Unstorable, reason: unstorable };
  const decoded = normalise(raw as RawEvent);
  if (!decoded.ok) return decoded;
  const tooLong = overlongKey(decoded.event);
  if (tooLong) return { ok: false, code: RejectCode.Unstorable, reason: tooLong };
  if (options.receivedAt !== undefined && Number.isFinite(options.receivedAt) && options.receivedAt >= 0)
    decoded.event.receivedAt = new Date(options.receivedAt).toISOString().slice(0, 23) + '000Z';
  const receivedAt = options.receivedAt ?? Date.now();
  const skew = options.maxFutureSkewMs ?? DEFAULT_MAX_FUTURE_SKEW_MS;
  if (Date.parse(decoded.event.time) - receivedAt > skew) {
    return {
      ok: false,
      code: RejectCode.FutureTime,
      reason: `/time ${decoded.event.time} is more than ${skew / 1000} s ahead of when the log received the event (${new Date(receivedAt).toISOString()})`,
    };
  }
  return decoded;
}

/** NUL and unpaired surrogates cannot be stored in PostgreSQL text or json: names the first such string. */
function findUnstorable(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') {
    if (value.includes('\u0000')) return `${path || '/'}: contains a NUL character, which PostgreSQL cannot store`;
    if (!value.isWellFormed()) return `${path || '/'}: contains an unpaired UTF-16 surrogate (not valid Unicode)`;
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  for (const [key, inner] of Object.entries(value)) {
    const keyProblem = findUnstorable(key, `${path}/${key}`);
    if (keyProblem) return keyProblem;
    const found = findUnstorable(inner, `${path}/${key}`);
    if (found) return found;
  }
  return undefined;
}

function overlongKey(event: PurchaseEvent): string | undefined {
  // A UTF-16 code unit takes at most 3 bytes in UTF-8: short strings need no counting.
  const check = (path: string, value: string | undefined, max: number) =>
    value !== undefined && value.length * 3 > max && Buffer.byteLength(value, 'utf8') > max
      ? `${path}: ${Buffer.byteLength(value, 'utf8')} bytes in UTF-8; at most ${max}`
      : undefined;
  const d = event.data as Record<string, string | undefined>;
  return (
    check('/appid', event.appId, MAX_APP_BYTES) ??
    check('/id', event.id, MAX_KEY_BYTES) ??
    ['transactionId', 'purchaseId', 'productId', 'receiptId', 'applicationUsername'].map((f) => check(`/data/${f}`, d[f], MAX_KEY_BYTES)).find(Boolean)
  );
}

type RawEvent = { id: string; source: string; appid: string; time: string; type: string; data: Record<string, unknown> };

function normalise(raw: RawEvent): Decoded {
  const time = normalizeTime(raw.time);
  if (!time) return { ok: false, code: RejectCode.SchemaViolation, reason: `/time: not an RFC 3339 date-time: ${raw.time}` };
  if (!storableYear(time)) return { ok: false, code: RejectCode.Unstorable, reason: `/time ${raw.time} is outside the years 0001-9999 in UTC` };
  const base = { id: raw.id, appId: raw.appid, time, source: raw.source };
  if (raw.type === 'receipt.linked') {
    const data = raw.data as { receiptId: string; applicationUsername: string };
    return { ok: true, event: { ...base, type: 'receipt.linked', data: { receiptId: data.receiptId, applicationUsername: data.applicationUsername } } };
  }
  if (raw.type === 'customer.erased') {
    const data = raw.data as { usernameHash?: string; applicationUsername?: string };
    return {
      ok: true,
      event: {
        ...base,
        type: 'customer.erased',
        data: data.usernameHash !== undefined ? { usernameHash: data.usernameHash } : { applicationUsername: data.applicationUsername },
      },
    };
  }

  const { priceUSD, priceMicros, ...rest } = raw.data as TransactionSnapshot & { priceUSD?: number; priceMicros?: number };
  for (const field of ['transactionId', 'productId', 'receiptId'] as const) {
    if (!rest[field].startsWith(`${rest.platform}:`)) {
      return {
        ok: false,
        code: RejectCode.BadIdentifier,
        reason: `/data/${field} must start with the platform prefix "${rest.platform}:" (got "${rest[field]}")`,
      };
    }
  }
  if (rest.amountUSD !== undefined && priceUSD !== undefined && rest.amountUSD !== priceUSD) {
    return { ok: false, code: RejectCode.SchemaViolation, reason: '/data: amountUSD and priceUSD disagree' };
  }
  if (rest.amountMicros !== undefined && priceMicros !== undefined && rest.amountMicros !== priceMicros) {
    return { ok: false, code: RejectCode.SchemaViolation, reason: '/data: amountMicros and priceMicros disagree' };
  }
  const data: TransactionSnapshot = pick(rest);
  data.amountUSD = rest.amountUSD ?? priceUSD;
  data.amountMicros = rest.amountMicros ?? priceMicros;
  for (const field of DATE_FIELDS) {
    const value = data[field];
    if (value !== undefined) {
      const normal = normalizeTime(value);
      if (!normal) return { ok: false, code: RejectCode.SchemaViolation, reason: `/data/${field}: not an RFC 3339 date-time` };
      if (!storableYear(normal)) return { ok: false, code: RejectCode.Unstorable, reason: `/data/${field} ${value} is outside the years 0001-9999 in UTC` };
      data[field] = normal;
    }
  }
  return { ok: true, event: { ...base, type: 'transaction.updated', data } };
}

/** PostgreSQL's timestamptz has no year 0, and the normal form has four year digits. */
const storableYear = (normal: string) => /^\d{4}-/.test(normal) && !normal.startsWith('0000-');

const KNOWN = Object.keys(TRANSACTION_FIELDS).filter((k) => k !== 'priceUSD' && k !== 'priceMicros');

/** Keeps the contract's fields only: unknown producer fields are ignored, not stored. */
function pick(data: Record<string, unknown>): TransactionSnapshot {
  const out: Record<string, unknown> = {};
  for (const key of KNOWN) if (data[key] !== undefined) out[key] = data[key];
  return out as TransactionSnapshot;
}

function isIdentifierError(e: ErrorObject): boolean {
  return (e.keyword === 'pattern' || e.keyword === 'minLength') && /\/(transactionId|productId|receiptId)$/.test(e.instancePath);
}

function describe(errors: ErrorObject[] | null | undefined): string {
  const e = errors?.[0];
  if (!e) return 'invalid event';
  const where = e.instancePath || '/';
  if (e.keyword === 'required') return `${where}: missing required property "${(e.params as { missingProperty: string }).missingProperty}"`;
  if (e.keyword === 'const') return `${where}: must be ${JSON.stringify((e.params as { allowedValue: unknown }).allowedValue)}`;
  return `${where}: ${e.message ?? 'invalid'}`;
}
