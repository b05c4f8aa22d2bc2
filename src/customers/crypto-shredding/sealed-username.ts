// Crypto-shredding (docs/privacy.md, "Crypto-shredding"): with CRYPTO_SHREDDING on, the events the
// service publishes itself carry the username sealed with a key kept for that customer alone in
// public.customer_keys. Erasure deletes the key, so every copy of those events (a Kafka topic the
// service cannot rewrite, its replicas and backups) names no one that can be read again.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { REDACTED_PREFIX, erasureHash, erasureKey } from '../erase-customer/erasure-hash.js';

type Query = { query: (sql: string, params?: unknown[]) => Promise<unknown> };

/** `sealed:v1:<erasure hash>:<base64url of IV (12 bytes), ciphertext, GCM tag (16 bytes)>`. */
export const SEALED_PREFIX = 'sealed:v1:';
const SEALED = /^sealed:v1:([0-9a-f]{64}):([A-Za-z0-9_-]+)$/;
const IV_BYTES = 12;
const TAG_BYTES = 16;

// The application and the hash are authenticated with the name, so a sealed name copied into
// another application's event or under another customer's hash does not open.
const aad = (appId: string, hash: string) => Buffer.from(`${appId}\u0000${hash}`, 'utf8');

export function sealUsername(key: Buffer, appId: string, hash: string, username: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv).setAAD(aad(appId, hash));
  const sealed = Buffer.concat([iv, cipher.update(username, 'utf8'), cipher.final(), cipher.getAuthTag()]);
  return `${SEALED_PREFIX}${hash}:${sealed.toString('base64url')}`;
}

export type SealedName = { hash: string; payload: Buffer };

/** The parts of a sealed username; undefined for anything else (a plain or redacted name). */
export function parseSealed(value: string): SealedName | undefined {
  const m = SEALED.exec(value);
  if (!m) return undefined;
  const payload = Buffer.from(m[2], 'base64url');
  return payload.length > IV_BYTES + TAG_BYTES ? { hash: m[1], payload } : undefined;
}

/** The username, or undefined when the key is not the one it was sealed with or the text was altered. */
export function openUsername(key: Buffer, appId: string, sealed: SealedName): string | undefined {
  const { payload } = sealed;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, payload.subarray(0, IV_BYTES)).setAAD(aad(appId, sealed.hash));
    decipher.setAuthTag(payload.subarray(payload.length - TAG_BYTES));
    return Buffer.concat([decipher.update(payload.subarray(IV_BYTES, payload.length - TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}

type PublishedEvent = { appid?: unknown; data?: object & { applicationUsername?: unknown } };

/**
 * Seals the username of each event (in place) with its customer's key, made on first use. Names
 * already sealed or redacted are left as they are. Two statements per call, whatever its size.
 */
export async function sealEvents(db: Query, events: readonly PublishedEvent[]): Promise<void> {
  const named = events.filter(
    (e): e is { appid: string; data: { applicationUsername: string } } =>
      typeof e.appid === 'string' &&
      typeof e.data?.applicationUsername === 'string' &&
      !e.data.applicationUsername.startsWith(SEALED_PREFIX) &&
      !e.data.applicationUsername.startsWith(REDACTED_PREFIX),
  );
  if (named.length === 0) return;
  const hashKey = await erasureKey(db);
  const wanted = new Map<string, { app: string; hash: string }>();
  const hashes = named.map((e) => {
    const hash = erasureHash(hashKey, e.appid, e.data.applicationUsername);
    wanted.set(`${e.appid}\u0000${hash}`, { app: e.appid, hash });
    return hash;
  });
  const list = [...wanted.values()];
  // Keys made here and lost to a concurrent writer's are never used: the read below returns the stored one.
  await db.query(
    `INSERT INTO public.customer_keys (app_id, username_hash, key) SELECT * FROM unnest($1::text[], $2::text[], $3::bytea[]) ORDER BY 1, 2 ON CONFLICT DO NOTHING`,
    [list.map((w) => w.app), list.map((w) => w.hash), list.map(() => randomBytes(32))],
  );
  const keys = await customerKeys(db, list);
  named.forEach((e, i) => {
    const key = keys.get(`${e.appid}\u0000${hashes[i]}`);
    // Erased between the two statements: the name is not published readable, it names no one.
    e.data.applicationUsername = key ? sealUsername(key, e.appid, hashes[i], e.data.applicationUsername) : `${REDACTED_PREFIX}${hashes[i]}`;
  });
}

async function customerKeys(db: Query, list: readonly { app: string; hash: string }[]): Promise<Map<string, Buffer>> {
  const rows = (await db.query(
    `SELECT k.app_id, k.username_hash, k.key FROM public.customer_keys k JOIN unnest($1::text[], $2::text[]) AS w(app_id, h) ON k.app_id = w.app_id AND k.username_hash = w.h`,
    [list.map((w) => w.app), list.map((w) => w.hash)],
  )) as { app_id: string; username_hash: string; key: Buffer }[];
  return new Map(rows.map((r) => [`${r.app_id}\u0000${r.username_hash}`, r.key]));
}

const MARKER = Buffer.from(`"${SEALED_PREFIX}`);

/**
 * The consumer's side, before decoding: each message whose username is sealed gets it opened with
 * its customer's key, or, when the key is gone (erased) or does not open it, `erased:<hash>`, which
 * the projection reads as naming no one (docs/privacy.md). Messages without a sealed name are
 * returned as they are (one byte search each); one key read per batch that has any.
 */
export async function openSealedMessages<M extends { value: Buffer | null }>(db: Query, messages: readonly M[]): Promise<M[]> {
  const found: { i: number; event: { appid: string; data: { applicationUsername: string } }; sealed: SealedName }[] = [];
  messages.forEach((msg, i) => {
    if (!msg.value || msg.value.indexOf(MARKER) < 0) return;
    let event: PublishedEvent;
    try {
      event = JSON.parse(msg.value.toString('utf8'));
    } catch {
      return; // the decoder refuses it with its own reason
    }
    const name = event?.data?.applicationUsername;
    const sealed = typeof name === 'string' && typeof event.appid === 'string' ? parseSealed(name) : undefined;
    if (sealed) found.push({ i, event: event as { appid: string; data: { applicationUsername: string } }, sealed });
  });
  if (found.length === 0) return [...messages];
  const keys = await customerKeys(
    db,
    found.map((f) => ({ app: f.event.appid, hash: f.sealed.hash })),
  );
  const out = [...messages];
  for (const f of found) {
    const key = keys.get(`${f.event.appid}\u0000${f.sealed.hash}`);
    f.event.data.applicationUsername = (key && openUsername(key, f.event.appid, f.sealed)) ?? `${REDACTED_PREFIX}${f.sealed.hash}`;
    out[f.i] = { ...messages[f.i], value: Buffer.from(JSON.stringify(f.event)) };
  }
  return out;
}
