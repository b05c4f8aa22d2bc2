import jwt from 'jsonwebtoken';
import { USERNAME_CLAIM } from './scopes.js';

export type MintOptions = {
  secret: string;
  appId: string;
  scopes: readonly string[];
  ttlSeconds: number;
  subject?: string;
  issuer?: string;
  audience?: string;
  /** Binds the token to one user of the app (USERNAME_CLAIM). */
  username?: string;
};

export function mintToken(o: MintOptions): string {
  // jsonwebtoken refuses options that are present but undefined.
  const options: jwt.SignOptions = { algorithm: 'HS256', expiresIn: o.ttlSeconds };
  if (o.subject) options.subject = o.subject;
  if (o.issuer) options.issuer = o.issuer;
  if (o.audience) options.audience = o.audience;
  const claims: Record<string, string> = { app: o.appId, scope: o.scopes.join(' ') };
  if (o.username !== undefined) claims[USERNAME_CLAIM] = o.username;
  return jwt.sign(claims, o.secret, options);
}

/** "90", "15m", "12h", "7d" -> seconds. */
export function parseTtl(value: string): number {
  const m = /^(\d+)([smhd]?)$/.exec(value.trim());
  if (!m) throw new Error(`--ttl must look like 3600, 15m, 12h or 7d (got "${value}")`);
  const n = Number(m[1]);
  const unit = { '': 1, s: 1, m: 60, h: 3600, d: 86400 }[m[2] as '' | 's' | 'm' | 'h' | 'd'];
  if (n <= 0) throw new Error('--ttl must be positive');
  return n * unit;
}
