import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, ErrorCode, InvalidParameterError } from './errors.js';
import { isDatabaseUnavailable } from '../database/database-errors.js';
import { codeForStatus, problem, PROBLEM_CONTENT_TYPE, type Problem } from './problem-http.js';

const RETRY_AFTER_SECONDS = 5;

/** RFC 6750 §3: how to authenticate, and for a rejected token, why (no error code when none was sent). */
function bearerChallenge(body: Problem): string | undefined {
  const quote = (s: string) => s.replace(/["\\]/g, "'");
  switch (body.code) {
    case ErrorCode.TokenMissing:
      return 'Bearer realm="subscription-records"';
    case ErrorCode.TokenInvalid:
    case ErrorCode.TokenExpired:
      return `Bearer realm="subscription-records", error="invalid_token", error_description="${quote(body.detail)}"`;
    case ErrorCode.InsufficientScope:
      return `Bearer realm="subscription-records", error="insufficient_scope", error_description="${quote(body.detail)}"`;
    default:
      return undefined;
  }
}

/** Turns every error leaving a controller (or the router) into an RFC 9457 problem response. */
@Catch()
export class ProblemFilter implements ExceptionFilter {
  private readonly logger = new Logger('http');

  catch(error: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const request = http.getRequest<FastifyRequest>();
    const reply = http.getResponse<FastifyReply>();
    let body = this.toProblem(error, request);
    // A path that exists for GET: the method is what is wrong (RFC 9110: 405 with Allow).
    if (body.status === 404 && request.method !== 'GET' && request.server.hasRoute({ method: 'GET', url: request.url.split('?')[0] })) {
      body = problem(ErrorCode.MethodNotAllowed, `${request.method} is not supported here; use GET.`, { instance: body.instance });
      void reply.header('allow', 'GET, HEAD');
    }
    const challenge = bearerChallenge(body);
    if (challenge) void reply.header('www-authenticate', challenge);
    // The read models are fine, the database just cannot answer now: tell clients when to come back.
    const away = body.code === ErrorCode.DatabaseUnavailable || body.code === ErrorCode.EventLogUnavailable || body.code === ErrorCode.StoreApiUnavailable;
    if (away) void reply.header('retry-after', String(RETRY_AFTER_SECONDS));
    if (away) {
      this.logger.warn({ err: (error as Error).message, reqId: request.id, msg: body.code.replaceAll('_', ' ') });
    } else if (body.code === ErrorCode.ServiceUnavailable) {
      // readiness saying what is down: an expected state, one line, no stack
      this.logger.warn({ reqId: request.id, url: request.url, msg: 'not ready' });
    } else if (body.status >= 500) {
      this.logger.error({ err: error, reqId: request.id, msg: 'request failed' });
    }
    void reply.status(body.status).header('content-type', PROBLEM_CONTENT_TYPE).send(JSON.stringify(body));
  }

  private toProblem(error: unknown, request: FastifyRequest): Problem {
    const instance = request.url.split('?')[0];
    if (error instanceof InvalidParameterError) {
      return problem(error.code, error.message, { instance, parameter: error.parameter });
    }
    if (error instanceof AppError) {
      return problem(error.code, error.message, { instance });
    }
    if (error instanceof HttpException) {
      const status = error.getStatus();
      const code = codeForStatus(status);
      // Nest's own messages for 4xx are safe to show ("Cannot GET /x"); 5xx details never are.
      if (status === 503) {
        // Readiness checks: say which dependency is down (names and states only, no internals).
        return { ...problem(code, 'A dependency of the service is not ready.', { instance }), status, checks: error.getResponse() } as Problem;
      }
      const detail = status < 500 ? error.message : 'The server could not complete the request.';
      return { ...problem(code, detail, { instance }), status };
    }
    if (isDatabaseUnavailable(error)) {
      return problem(ErrorCode.DatabaseUnavailable, 'The database is not answering right now; retry after the Retry-After delay.', { instance });
    }
    const status = (error as { statusCode?: unknown })?.statusCode;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      // Fastify errors (malformed URL, unsupported media type...) carry a client status and a safe message.
      return { ...problem(codeForStatus(status), (error as Error).message, { instance }), status };
    }
    return problem(ErrorCode.Internal, 'The server could not complete the request.', { instance });
  }
}
