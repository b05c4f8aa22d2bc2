import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { SecretOrKeyProvider } from 'passport-jwt';
import { OperatorError } from '../common/operator-error.js';
import type { AppConfig } from '../config/app-config.js';

export type VerificationKeys = {
  /** HS256 secret, from JWT_SECRET or generated into DATA_DIR for local use. */
  secret?: string;
  /** Key lookup for RS256/ES256 tokens against JWT_JWKS_URI (jwks-rsa, cached and rate limited). */
  jwks?: SecretOrKeyProvider;
  /** Set when the secret was generated (or read back) from DATA_DIR rather than configured. */
  generatedSecretPath?: string;
};

/** DATA_DIR/jwt-secret exists but cannot be used: refused, never replaced. */
export class SigningKeyError extends OperatorError {
  readonly code = 'jwt_secret_unusable';
}

/** Generated as 43 base64url characters; one written by hand is at least 32 printable ones. */
const USABLE_SECRET = /^[\x20-\x7e]{32,}$/;

/**
 * Without JWT_SECRET or JWT_JWKS_URI a local install still needs tokens: generate a secret into
 * DATA_DIR once and reuse it.
 */
export async function resolveVerificationKeys(config: AppConfig): Promise<VerificationKeys> {
  const { secret, jwksUri } = config.jwt;
  if (secret || jwksUri) return { secret, jwks: jwksUri ? await jwksProvider(jwksUri) : undefined };
  // loadConfig already refused production without one of them.
  const file = generatedSecretFile(config);
  const existing = await readGeneratedSecret(file);
  if (existing !== undefined) return { secret: existing, generatedSecretPath: file };
  const generated = randomBytes(32).toString('base64url');
  await mkdir(path.dirname(file), { recursive: true });
  try {
    // 'wx': a file that appeared meanwhile (the CLI and the service starting together) is kept.
    await writeFile(file, generated + '\n', { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return { secret: (await readGeneratedSecret(file))!, generatedSecretPath: file };
  }
  return { secret: generated, generatedSecretPath: file };
}

/**
 * For the service, before anything starts: a damaged generated secret refused later, inside Nest's
 * start (which exits the process on its own), would be a logged stack and leave the embedded
 * PostgreSQL running.
 */
export async function checkGeneratedSecret(config: AppConfig): Promise<void> {
  if (config.jwt.secret || config.jwt.jwksUri) return;
  await readGeneratedSecret(generatedSecretFile(config));
}

function generatedSecretFile(config: AppConfig): string {
  return path.resolve(config.dataDir, 'jwt-secret');
}

/**
 * The generated secret, or undefined when none was generated yet. A file that is there but short or
 * corrupt is refused: every token minted so far was signed with what it held, and a new secret
 * would silently invalidate them all, while the old one may still be restored from a backup.
 */
async function readGeneratedSecret(file: string): Promise<string | undefined> {
  let content: string;
  try {
    content = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new SigningKeyError(`${file} cannot be read (${(error as Error).message}): fix its permissions, or set JWT_SECRET`);
  }
  const secret = content.trim();
  if (USABLE_SECRET.test(secret)) return secret;
  const what =
    secret.length === 0
      ? 'it is empty'
      : /^[\x20-\x7e]*$/.test(secret)
        ? `${secret.length} characters, at least 32 needed`
        : 'it holds characters a secret never has';
  throw new SigningKeyError(
    `${file} is damaged (${what}) and was left as it is, since a new secret would invalidate every token signed with the old one: ` +
      'restore it from a backup, or set JWT_SECRET, or delete the file deliberately to generate a new secret (tokens minted earlier then stop working)',
  );
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
