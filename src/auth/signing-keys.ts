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

// Loaded only when configured: jwks-rsa pulls in the ESM-only `jose` through require().
async function jwksProvider(jwksUri: string): Promise<SecretOrKeyProvider> {
  const { passportJwtSecret } = await import('jwks-rsa');
  return passportJwtSecret({ jwksUri, cache: true, rateLimit: true, jwksRequestsPerMinute: 10 });
}
