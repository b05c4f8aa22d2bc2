import type { EntityManager } from 'typeorm';

// The crypto-shredding keys (public.customer_keys, docs/privacy.md) go with the customer's erasure:
// written only here and where they are made (sealed-username.ts).

/**
 * Keys made at or before each erasure go: an erasure another producer sent, or a database restored
 * from a backup older than the erasure. A re-signup's key is newer and stays.
 */
export async function forgetKeysErased(
  m: Pick<EntityManager, 'query'>,
  erasures: readonly { app_id: string; username_hash: string; erased_at: string }[],
): Promise<void> {
  if (erasures.length === 0) return;
  await m.query(
    `DELETE FROM public.customer_keys k USING unnest($1::text[], $2::text[], $3::timestamptz[]) AS e(app_id, h, erased_at)
     WHERE k.app_id = e.app_id AND k.username_hash = e.h AND k.created_at <= e.erased_at`,
    [erasures.map((e) => e.app_id), erasures.map((e) => e.username_hash), erasures.map((e) => e.erased_at)],
  );
}

/** Every key of these customers, whenever made: an erasure request (erase-customers.ts), after its event is in the log. */
export async function forgetKeys(m: Pick<EntityManager, 'query'>, appId: string, usernameHashes: readonly string[]): Promise<void> {
  await m.query(`DELETE FROM public.customer_keys WHERE app_id = $1 AND username_hash = ANY($2::text[])`, [appId, usernameHashes]);
}
