import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';

type Query = { query: (sql: string, params?: unknown[]) => Promise<unknown> };

/** What a redacted event names instead of the username: no one, matched to its erasure by the hash. */
export const REDACTED_PREFIX = 'erased:';
/** A redacted username, as a pattern both JavaScript and PostgreSQL (`~`) read alike: the live path and the rebuild's fold share it. */
export const REDACTED_PATTERN = `^${REDACTED_PREFIX}([0-9a-f]{64})$`;
const REDACTED = new RegExp(REDACTED_PATTERN);

/** A redacted username, or a sealed one whose key is gone: it names no one, whatever its date (docs/privacy.md). */
export const isRedacted = (username: string) => REDACTED.test(username);

/**
 * The keyed hash that stands for a username once it is erased (docs/privacy.md): HMAC-SHA256 of the
 * application id, a NUL byte and the username, under the 64-byte key of public.erasure_key, in
 * lower-case hex. A redacted username (`erased:<hash>`) stands for its own hash. The SQL function
 * public.erasure_hash computes the same (a unit test and erasure.int-spec check they agree).
 */
export function erasureHash(key: KeyObject, appId: string, username: string): string {
  const redacted = REDACTED.exec(username);
  if (redacted) return redacted[1];
  return createHmac('sha256', key)
    .update(appId, 'utf8')
    .update(Buffer.from([0]))
    .update(username, 'utf8')
    .digest('hex');
}

const keys = new WeakMap<object, Promise<KeyObject>>();

/**
 * The key, read once per connection pool (it never changes: made once by the migration). `via` runs
 * the read: inside a transaction, pass its manager, so the read needs no second pooled connection.
 * A KeyObject: given bytes, createHmac makes one on every call, most of a hash's cost (bench/notes.md,
 * "HMAC keys"); the projection hashes every username of a batch.
 */
export function erasureKey(db: object & Query, via: Query = db): Promise<KeyObject> {
  let key = keys.get(db);
  if (key === undefined) {
    key = via.query('SELECT key FROM public.erasure_key').then((rows) => createSecretKey((rows as { key: Buffer }[])[0].key));
    key.catch(() => keys.delete(db));
    keys.set(db, key);
  }
  return key;
}
