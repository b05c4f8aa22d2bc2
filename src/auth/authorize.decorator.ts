import { applyDecorators, CanActivate, createParamDecorator, ExecutionContext, Injectable, Logger, SetMetadata, UseGuards } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthGuard } from '@nestjs/passport';
import { ApiSecurity } from '@nestjs/swagger';
import { LRUCache } from 'lru-cache';
import { ExtractJwt } from 'passport-jwt';
import { ErrorCode } from '../common/errors.js';
import { AuthError } from './auth.errors.js';
import { USERNAME_CLAIM, type Principal, type Scope } from './scopes.js';

/** What a token bound to one user (an app's token) may do. */
const USER_BOUND_SCOPES: ReadonlySet<Scope> = new Set<Scope>(['purchases:write']);

const REQUIRED_SCOPE = 'required_scope';

/** 401 for every way a token can be absent or unverifiable, with the reason as the code. */
@Injectable()
export class JwtAuthGuard extends AuthGuard('jwt') {
  private readonly logger = new Logger('auth');
  /**
   * HS256 tokens this guard verified, until they expire. Clients send the same token on every
   * request, and passport + jsonwebtoken cost more than the rest of a one-user lookup (bench/notes.md,
   * issue 25). Only HS256: its verdict depends on the token, the secret and the clock alone, all
   * fixed for this app but the clock, which `until` stands for; a JWKS key can be withdrawn.
   * Only verified tokens get in, so the bound is reached only by many live tokens, not by forgeries.
   */
  private readonly verified = new LRUCache<string, { principal: Principal; until: number }>({ max: 4096 });

  override async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined>; user?: Principal }>();
    const token = bearerToken(request);
    const known = token === undefined ? undefined : this.verified.get(token);
    if (known !== undefined && Date.now() < known.until) {
      request.user = known.principal;
      return true;
    }
    const allowed = (await super.canActivate(context)) as boolean;
    if (allowed && token !== undefined && request.user) {
      const { header, payload } = decodeParts(token);
      // jsonwebtoken refuses a token once the clock reaches exp (validate() refused one without exp)
      if (header?.alg === 'HS256' && typeof payload?.exp === 'number') this.verified.set(token, { principal: request.user, until: payload.exp * 1000 });
    }
    return allowed;
  }

  override handleRequest<T>(err: unknown, user: T, info: unknown, context: ExecutionContext): T {
    if (user && !err) return user;
    if (err instanceof AuthError) throw err;
    if (info instanceof Error && info.name === 'TokenExpiredError') {
      throw new AuthError(ErrorCode.TokenExpired, 'The bearer token has expired.');
    }
    const message = info instanceof Error ? info.message : '';
    if (message === 'No auth token') {
      throw new AuthError(ErrorCode.TokenMissing, 'Send a bearer token in the Authorization header.');
    }
    const authorization = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers.authorization ?? '';
    const malformed = describeMalformed(/^Bearer\s+(\S*)/i.exec(authorization)?.[1] ?? '');
    if (malformed) throw new AuthError(ErrorCode.TokenInvalid, malformed);
    if (TOKEN_CHECK_WORDS.some((words) => words.test(message))) throw new AuthError(ErrorCode.TokenInvalid, `The bearer token was rejected: ${message}.`);
    // Anything else (a JWKS endpoint unreachable, a key that cannot be read) is about the service, not the token: it is logged, not echoed.
    this.logger.warn(`a bearer token could not be verified: ${message || String(err)}`);
    throw new AuthError(ErrorCode.TokenInvalid, 'The bearer token could not be verified.');
  }
}

/** The token as passport-jwt reads it (Authorization: Bearer), so the cache sees exactly what was verified. */
const extractBearer = ExtractJwt.fromAuthHeaderAsBearerToken();
const bearerToken = (request: unknown): string | undefined => extractBearer(request as never) ?? undefined;

function decodeParts(token: string): { header?: { alg?: unknown }; payload?: { exp?: unknown } } {
  const [header, payload] = token.split('.').map((part) => {
    try {
      return JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>;
    } catch {
      return undefined;
    }
  });
  return { header, payload };
}

/** What jsonwebtoken says of the token itself: its own checks, which name nothing of the service but its configured iss/aud. */
const TOKEN_CHECK_WORDS = [
  /^invalid signature$/,
  /^jwt (malformed|not active|signature is required)$/,
  /^jwt (audience|issuer|id|subject) invalid\. expected: [^\n]{0,300}$/,
  /^invalid (token|algorithm)$/,
];

/**
 * What is wrong with a token that is not a verifiable JWT at all, in the caller's terms (the JWT
 * library's own words, "jwt malformed" or an unknown algorithm, do not say what to fix).
 */
export function describeMalformed(token: string): string | undefined {
  const parts = token.split('.');
  if (parts.length !== 3 || parts.some((p) => !/^[A-Za-z0-9_-]*$/.test(p)) || !parts[0] || !parts[1]) {
    return 'The bearer token is not a JWT: expected three base64url parts, header.payload.signature.';
  }
  let header: { alg?: unknown };
  try {
    header = JSON.parse(Buffer.from(parts[0], 'base64url').toString('utf8')) as { alg?: unknown };
  } catch {
    return 'The bearer token is not a JWT: its header is not base64url-encoded JSON.';
  }
  if (typeof header.alg !== 'string' || header.alg === 'none' || !['HS256', 'RS256', 'ES256'].includes(header.alg)) {
    return `The bearer token is signed with ${JSON.stringify(header.alg ?? null)}; tokens must be signed with HS256 (JWT_SECRET) or RS256/ES256 (JWT_JWKS_URI).`;
  }
  if (!parts[2]) return 'The bearer token has no signature.';
  return undefined;
}

/** 403 when a valid token does not name an application or lacks the route's scope. */
@Injectable()
export class ScopeGuard implements CanActivate {
  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    const scope = this.reflector.get<Scope>(REQUIRED_SCOPE, context.getHandler());
    const principal = context.switchToHttp().getRequest<{ user: Principal }>().user;
    if (!principal.appId) {
      throw new AuthError(ErrorCode.AppClaimMissing, 'The token has no "app" claim naming the application to read.');
    }
    if (!principal.scopes.has(scope)) {
      throw new AuthError(ErrorCode.InsufficientScope, `The token's scope claim must include "${scope}".`);
    }
    // A token bound to one user is what an app holds: it may hand over that user's purchases, never read other customers.
    if (principal.username !== undefined && !USER_BOUND_SCOPES.has(scope)) {
      throw new AuthError(
        ErrorCode.InsufficientScope,
        `A token bound to one user (the "${USERNAME_CLAIM}" claim) may only be used for ${[...USER_BOUND_SCOPES].join(', ')}.`,
      );
    }
    return true;
  }
}

export function Authorize(scope: Scope) {
  return applyDecorators(SetMetadata(REQUIRED_SCOPE, scope), UseGuards(JwtAuthGuard, ScopeGuard), ApiSecurity('bearer', [scope]));
}

export const CurrentPrincipal = createParamDecorator(
  (_: unknown, context: ExecutionContext): Principal => context.switchToHttp().getRequest<{ user: Principal }>().user,
);
