/** What a token gets when no scope is asked for: reading only. */
export const READ_SCOPES = ['customers:read', 'transactions:read'] as const;
/** customers:erase (DELETE /v2/customers/{applicationUsername}) is granted only when asked for by name. */
export const SCOPES = [...READ_SCOPES, 'customers:erase'] as const;
export type Scope = (typeof SCOPES)[number];

/** What a verified token grants: the tenant (`app` claim) and its OAuth 2 scopes. */
export type Principal = { appId: string; scopes: ReadonlySet<string>; subject?: string };
