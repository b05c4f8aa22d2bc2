/** What a token gets when no scope is asked for: reading only. */
export const READ_SCOPES = ['customers:read', 'transactions:read'] as const;
/**
 * Granted only when asked for by name: customers:erase (DELETE /v2/customers/{applicationUsername}),
 * purchases:write (POST /v2/purchases), entitlements:write (PUT and DELETE /v2/entitlements/{name}).
 */
export const SCOPES = [...READ_SCOPES, 'customers:erase', 'purchases:write', 'entitlements:write'] as const;
export type Scope = (typeof SCOPES)[number];

/**
 * The claim that binds a token to one of the app's users (docs/purchases.md): an app holding such a
 * token may record purchases for that username only.
 */
export const USERNAME_CLAIM = 'applicationUsername';

/** What a verified token grants: the tenant (`app` claim), its OAuth 2 scopes, and the user it is bound to, if any. */
export type Principal = { appId: string; scopes: ReadonlySet<string>; subject?: string; username?: string };
