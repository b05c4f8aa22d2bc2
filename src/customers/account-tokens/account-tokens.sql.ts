// public.account_tokens (docs/purchases.md): written and read only through these statements.

export const accountTokensSql = {
  /** $1 application, $2 token, $3 username, $4 its erasure hash: the first remembered stays. */
  remember: `
    INSERT INTO public.account_tokens (app_id, token, application_username, username_hash) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,

  /** $1 applications, $2 tokens (one pair per event): the usernames remembered for them. */
  resolve: `
    SELECT t.app_id, t.token::text AS token, t.application_username FROM unnest($1::text[], $2::uuid[]) AS w(app_id, token)
    JOIN public.account_tokens t ON t.app_id = w.app_id AND t.token = w.token`,

  /** $1 applications, $2 erasure hashes, $3 erasure times: tokens remembered at or before each erasure. */
  forgetErased: `
    DELETE FROM public.account_tokens t USING unnest($1::text[], $2::text[], $3::timestamptz[]) AS e(app_id, h, erased_at)
    WHERE t.app_id = e.app_id AND t.username_hash = e.h AND t.created_at <= e.erased_at`,

  /** $1 application, $2 erasure hashes: every token of these customers. */
  forget: `DELETE FROM public.account_tokens WHERE app_id = $1 AND username_hash = ANY($2::text[])`,
};
