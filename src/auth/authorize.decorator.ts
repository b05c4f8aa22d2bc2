import {
  applyDecorators,
  createParamDecorator,
  ExecutionContext,
  Injectable,
  Logger,
  Optional,
  SetMetadata,
  UseGuards,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthGuard, AuthModuleOptions } from '@nestjs/passport';
import { ApiSecurity } from '@nestjs/swagger';
import { LRUCache } from 'lru-cache';
import { ExtractJwt } from 'passport-jwt';
import { ErrorCode } from '../common/errors.js';
import { AuthError } from './auth.errors.js';
import type { Principal, Scope } from './scopes.js';

const REQUIRED_SCOPE = 'required_scope';

/**
 * 401 for every way a token can be absent or unverifiable, with the reason as the code; then 403 when
 * the token names no application or lacks the route's scope. One guard for both: the read endpoints'
 * hot path pays for one guard call, not two (issue 25).
 */
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
  /** Each route's @Authorize scope, read from its metadata once. */
  private readonly scopes = new WeakMap<object, Scope>();

  constructor(
    private readonly reflector: Reflector,
    @Optional() options?: AuthModuleOptions,
  ) {
    super(options);
  }

  override async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined>; user?: Principal }>();
    const token = bearerToken(request);
    const known = token === undefined ? undefined : this.verified.get(token);
    if (known !== undefined && Date.now() < known.until) {
      request.user = known.principal;
    } else {
      // passport answers 401 itself (handleRequest below): a false here is never reached in practice
      if (!((await super.canActivate(context)) as boolean) || !request.user) return false;
      if (token !== undefined) {
        const { header, payload } = decodeParts(token);
        // jsonwebtoken refuses a token once the clock reaches exp (validate() refused one without exp)
        if (header?.alg === 'HS256' && typeof payload?.exp === 'number') this.verified.set(token, { principal: request.user, until: payload.exp * 1000 });
      }
    }
    requireScope(request.user, this.scopeOf(context.getHandler()));
    return true;
  }

  private scopeOf(handler: object): Scope {
    let scope = this.scopes.get(handler);
    if (scope === undefined) {
      scope = this.reflector.get<Scope>(REQUIRED_SCOPE, handler as never);
      // A guarded route without a scope would let every token in: refuse to serve it at all.
      if (scope === undefined) throw new Error('JwtAuthGuard runs only on routes with @Authorize(scope)');
      this.scopes.set(handler, scope);
    }
    return scope;
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
function requireScope(principal: Principal, scope: Scope): void {
  if (!principal.appId) {
    throw new AuthError(ErrorCode.AppClaimMissing, 'The token has no "app" claim naming the application to read.');
  }
  if (!principal.scopes.has(scope)) {
    throw new AuthError(ErrorCode.InsufficientScope, `The token's scope claim must include "${scope}".`);
  }
}

export function Authorize(scope: Scope) {
  return applyDecorators(SetMetadata(REQUIRED_SCOPE, scope), UseGuards(JwtAuthGuard), ApiSecurity('bearer', [scope]));
}

export const CurrentPrincipal = createParamDecorator(
  (_: unknown, context: ExecutionContext): Principal => context.switchToHttp().getRequest<{ user: Principal }>().user,
);
