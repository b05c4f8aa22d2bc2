import jwt from 'jsonwebtoken';

export type MintOptions = {
  secret: string;
  appId: string;
  scopes: readonly string[];
  ttlSeconds: number;
  subject?: string;
  issuer?: string;
  audience?: string;
};

export function mintToken(o: MintOptions): string {
  return jwt.sign({ app: o.appId, scope: o.scopes.join(' ') }, o.secret, {
    algorithm: 'HS256',
    expiresIn: o.ttlSeconds,
    subject: o.subject,
    issuer: o.issuer,
    audience: o.audience,
  });
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
