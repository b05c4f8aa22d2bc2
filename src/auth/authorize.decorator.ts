import {
  applyDecorators,
  CanActivate,
  createParamDecorator,
  ExecutionContext,
  Injectable,
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
  override handleRequest<T>(err: unknown, user: T, info: unknown): T {
    if (user && !err) return user;
    if (err instanceof AuthError) throw err;
    if (info instanceof Error && info.name === 'TokenExpiredError') {
      throw new AuthError(ErrorCode.TokenExpired, 'The bearer token has expired.');
    }
    const message = info instanceof Error ? info.message : '';
    if (message === 'No auth token') {
      throw new AuthError(ErrorCode.TokenMissing, 'Send a bearer token in the Authorization header.');
    }
    throw new AuthError(ErrorCode.TokenInvalid, `The bearer token was rejected${message ? `: ${message}` : ''}.`);
  }
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
