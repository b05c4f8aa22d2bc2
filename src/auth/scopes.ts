export const SCOPES = ['customers:read', 'transactions:read'] as const;
export type Scope = (typeof SCOPES)[number];

/** What a verified token grants: the tenant (`app` claim) and its OAuth 2 scopes. */
export type Principal = { appId: string; scopes: ReadonlySet<string>; subject?: string };
