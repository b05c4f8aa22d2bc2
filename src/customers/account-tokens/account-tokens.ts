import { createHmac, type KeyObject } from 'node:crypto';
import { stringify as uuidStringify, validate as isUuid } from 'uuid';
import { erasureHash, erasureKey } from '../erase-customer/erasure-hash.js';
import { accountTokensSql } from './account-tokens.sql.js';

// The account tokens (public.account_tokens, docs/purchases.md): the UUID the service derives for a
// username, which the app hands the store (Apple's appAccountToken, Google's obfuscatedAccountId)
// and the store sends back in its notifications. Written here only; erasure deletes them.

type Query = { query: (sql: string, params?: unknown[]) => Promise<unknown> };

/**
 * The token of `username` in `appId`: a UUID (version 8, RFC 9562's custom layout) of the first 16
 * bytes of HMAC-SHA256 under the service's erasure key (public.erasure_key, made once, secret).
 * Derived, so every replica makes the same one without asking another; keyed, so no one without the
 * key can compute a user's token from a guessed e-mail address and look for it at the stores;
 * remembered (rememberAccountToken), because it cannot be turned back into its name.
 */
export function accountTokenFor(key: KeyObject, appId: string, username: string): string {
  const bytes = createHmac('sha256', key)
    .update('account-token')
    .update(Buffer.from([0]))
    .update(appId, 'utf8')
    .update(Buffer.from([0]))
    .update(username, 'utf8')
    .digest();
  bytes[6] = (bytes[6] & 0x0f) | 0x80; // version 8
  bytes[8] = (bytes[8] & 0x3f) | 0x80; // variant 10
  return uuidStringify(bytes.subarray(0, 16));
}

/** Derives and remembers the token of `username`; returns it. */
export async function rememberAccountToken(db: Query, appId: string, username: string): Promise<string> {
  const key = await erasureKey(db);
  const token = accountTokenFor(key, appId, username);
  const hash = erasureHash(key, appId, username);
  await db.query(accountTokensSql.remember, [appId, token, username, hash]);
  return token;
}

type NamedEvent = { appid?: unknown; data?: object };

/**
 * Replaces, in place, every event's applicationUsername that is a token this service derived by the
 * username it stands for: what a store sends back (an appAccountToken, an obfuscatedExternalAccountId)
 * names the user the app bought for. Other UUIDs (apps that set their own) pass as they are.
 */
export async function resolveAccountTokens(db: Query, events: readonly NamedEvent[]): Promise<void> {
  const tokened = events.filter(
    (e): e is { appid: string; data: { applicationUsername: string } } =>
      typeof e.appid === 'string' && isUuid((e.data as { applicationUsername?: unknown } | undefined)?.applicationUsername),
  );
  if (tokened.length === 0) return;
  const rows = (await db.query(accountTokensSql.resolve, [tokened.map((e) => e.appid), tokened.map((e) => e.data.applicationUsername)])) as {
    app_id: string;
    token: string;
    application_username: string;
  }[];
  const names = new Map(rows.map((r) => [`${r.app_id}\u0000${r.token}`, r.application_username]));
  for (const e of tokened) {
    const name = names.get(`${e.appid}\u0000${e.data.applicationUsername.toLowerCase()}`);
    if (name !== undefined) e.data.applicationUsername = name;
  }
}

/** Tokens remembered at or before each erasure go (as crypto-shredding keys do, forget-keys.ts). */
export async function forgetAccountTokensErased(m: Query, erasures: readonly { app_id: string; username_hash: string; erased_at: string }[]): Promise<void> {
  if (erasures.length === 0) return;
  await m.query(accountTokensSql.forgetErased, [erasures.map((e) => e.app_id), erasures.map((e) => e.username_hash), erasures.map((e) => e.erased_at)]);
}

/** Every token of these customers: an erasure request (erase-customers.ts), after its event is in the log. */
export async function forgetAccountTokens(m: Query, appId: string, usernameHashes: readonly string[]): Promise<void> {
  await m.query(accountTokensSql.forget, [appId, usernameHashes]);
}
