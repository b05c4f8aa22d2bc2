import {
  applyDecorators,
  CanActivate,
  createParamDecorator,
  ExecutionContext,
  Injectable,
  Logger,
  SetMetadata,
  UseGuards,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthGuard } from '@nestjs/passport';
import { ApiSecurity } from '@nestjs/swagger';
import { ErrorCode } from '../common/errors.js';
import { AuthError } from './auth.errors.js';
import type { Principal, Scope } from './scopes.js';

const REQUIRED_SCOPE = 'required_scope';

/** 401 for every way a token can be absent or unverifiable, with the reason as the code. */
@Injectable()
export class JwtAuthGuard extends AuthGuard('jwt') {
  private readonly logger = new Logger('auth');

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
    return true;
  }
}

export function Authorize(scope: Scope) {
  return applyDecorators(SetMetadata(REQUIRED_SCOPE, scope), UseGuards(JwtAuthGuard, ScopeGuard), ApiSecurity('bearer', [scope]));
}

export const CurrentPrincipal = createParamDecorator(
  (_: unknown, context: ExecutionContext): Principal => context.switchToHttp().getRequest<{ user: Principal }>().user,
);
