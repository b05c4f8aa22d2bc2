import { createSecretKey } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { ExtractJwt, Strategy, type SecretOrKeyProvider } from 'passport-jwt';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { applicationIdProblem } from '../common/application-id.js';
import { ErrorCode } from '../common/errors.js';
import { AuthError } from './auth.errors.js';
import { USERNAME_CLAIM, type Principal } from './scopes.js';
import { VERIFICATION_KEYS } from './tokens.js';
import type { VerificationKeys } from './signing-keys.js';

type Claims = { app?: unknown; scope?: unknown; sub?: unknown; exp?: unknown; [USERNAME_CLAIM]?: unknown };

/**
 * Bearer tokens: HS256 against JWT_SECRET and/or RS256/ES256 against the JWKS, chosen by the
 * token's own `alg` but only among the algorithms pinned here (never `none`).
 */
@Injectable()
export class JwtStrategy extends PassportStrategy(Strategy, 'jwt') {
  constructor(@Inject(APP_CONFIG) config: AppConfig, @Inject(VERIFICATION_KEYS) keys: VerificationKeys) {
    const { jwks } = keys;
    // A KeyObject: given a string, jsonwebtoken first tries it as a PEM public key on every verify.
    const secret = keys.secret ? createSecretKey(Buffer.from(keys.secret)) : undefined;
    const provider: SecretOrKeyProvider = (request, rawJwtToken, done) => {
      const alg = headerAlg(rawJwtToken);
      if (alg === 'HS256' && secret) return done(null, secret as unknown as string);
      if ((alg === 'RS256' || alg === 'ES256') && jwks) return jwks(request, rawJwtToken, done);
      return done(new Error(`token algorithm ${alg ?? 'unknown'} is not accepted`));
    };
    super({
      jwtFromRequest: ExtractJwt.fromAuthHeaderAsBearerToken(),
      secretOrKeyProvider: provider,
      algorithms: [...(keys.secret ? ['HS256' as const] : []), ...(jwks ? ['RS256' as const, 'ES256' as const] : [])],
      issuer: config.jwt.issuer,
      audience: config.jwt.audience,
      ignoreExpiration: false,
    });
  }

  validate(claims: Claims): Principal {
    // jsonwebtoken checks exp only when present: a token without one would never expire.
    if (typeof claims.exp !== 'number') throw new AuthError(ErrorCode.TokenInvalid, 'The bearer token has no "exp" claim; tokens must expire.');
    const appProblem = typeof claims.app === 'string' && claims.app !== '' ? applicationIdProblem(claims.app) : undefined;
    if (appProblem) throw new AuthError(ErrorCode.TokenInvalid, `The token's "app" claim is not a valid application id: it ${appProblem}.`);
    const scopes = typeof claims.scope === 'string' ? claims.scope.split(' ').filter(Boolean) : [];
    const username = claims[USERNAME_CLAIM];
    // A binding that is there but unreadable must not fall back to "any user".
    if (username !== undefined && (typeof username !== 'string' || username === ''))
      throw new AuthError(ErrorCode.TokenInvalid, `The token's "${USERNAME_CLAIM}" claim must be a non-empty string.`);
    return {
      appId: typeof claims.app === 'string' ? claims.app : '',
      scopes: new Set(scopes),
      subject: typeof claims.sub === 'string' ? claims.sub : undefined,
      username,
    };
  }
}

function headerAlg(token: string): string | undefined {
  try {
    const header = JSON.parse(Buffer.from(token.split('.')[0] ?? '', 'base64url').toString('utf8')) as { alg?: unknown };
    return typeof header.alg === 'string' ? header.alg : undefined;
  } catch {
    return undefined;
  }
}
