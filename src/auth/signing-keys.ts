import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { SecretOrKeyProvider } from 'passport-jwt';
import type { AppConfig } from '../config/app-config.js';

export type VerificationKeys = {
  /** HS256 secret, from JWT_SECRET or generated into DATA_DIR for local use. */
  secret?: string;
  /** Key lookup for RS256/ES256 tokens against JWT_JWKS_URI (jwks-rsa, cached and rate limited). */
  jwks?: SecretOrKeyProvider;
  /** Set when the secret was generated (or read back) from DATA_DIR rather than configured. */
  generatedSecretPath?: string;
};

/**
 * Without JWT_SECRET or JWT_JWKS_URI a local install still needs tokens: generate a secret into
 * DATA_DIR once and reuse it.
 */
export async function resolveVerificationKeys(config: AppConfig): Promise<VerificationKeys> {
  const { secret, jwksUri } = config.jwt;
  if (secret || jwksUri) return { secret, jwks: jwksUri ? await jwksProvider(jwksUri) : undefined };
  // loadConfig already refused production without one of them.
  const file = path.resolve(config.dataDir, 'jwt-secret');
  try {
    const existing = (await readFile(file, 'utf8')).trim();
    if (existing.length >= 32) return { secret: existing, generatedSecretPath: file };
  } catch {
    // not generated yet
  }
  const generated = randomBytes(32).toString('base64url');
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, generated + '\n', { mode: 0o600 });
  return { secret: generated, generatedSecretPath: file };
}

/** An unknown kid looks the JWKS up again at most this often, whatever the kid. */
const REFRESH_MIN_MS = 5_000;
/** Known keys are looked up again in the background after this long (keys removed by the issuer). */
const REFRESH_MAX_AGE_MS = 10 * 60_000;

/**
 * RS256/ES256 keys from the JWKS. jwks-rsa fetches the document; the cache and its refresh policy
 * are here: a token naming an unknown kid triggers at most one fetch per REFRESH_MIN_MS for all
 * kids together, so tokens with made-up kids cannot use up the fetches a real key rotation needs
 * (jwks-rsa's own limiter counts them per request and refused a rotation for a minute).
 */
async function jwksProvider(jwksUri: string): Promise<SecretOrKeyProvider> {
  // Loaded only when configured: jwks-rsa pulls in the ESM-only `jose` through require().
  const { JwksClient } = await import('jwks-rsa');
  const client = new JwksClient({ jwksUri, cache: false, rateLimit: false, timeout: 5_000 });
  let keys = new Map<string, string>();
  let fetchedAt = 0;
  let inflight: Promise<void> | undefined;
  const refresh = () =>
    (inflight ??= client
      .getSigningKeys()
      .then((list) => {
        keys = new Map(list.map((k) => [k.kid ?? '', k.getPublicKey()]));
      })
      .finally(() => {
        fetchedAt = Date.now();
        inflight = undefined;
      }));
  const lookup = (kid: string | undefined) => (kid === undefined ? (keys.size === 1 ? [...keys.values()][0] : undefined) : keys.get(kid));

  return (_request, rawJwtToken, done) => {
    const kid = headerField(rawJwtToken, 'kid');
    if (Date.now() - fetchedAt > REFRESH_MAX_AGE_MS) void refresh().catch(() => undefined);
    const known = lookup(kid);
    if (known) return done(null, known);
    if (Date.now() - fetchedAt < REFRESH_MIN_MS) return done(new Error(`signing key ${kid ?? '(no kid)'} is not in the JWKS`));
    refresh().then(
      () => {
        const key = lookup(kid);
        if (key) done(null, key);
        else done(new Error(`signing key ${kid ?? '(no kid)'} is not in the JWKS`));
      },
      (error: Error) => done(new Error(`the JWKS could not be fetched: ${error.message}`)),
    );
  };
}

function headerField(token: string, field: string): string | undefined {
  try {
    const header = JSON.parse(Buffer.from(token.split('.')[0] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
    return typeof header[field] === 'string' ? (header[field] as string) : undefined;
  } catch {
    return undefined;
  }
}
