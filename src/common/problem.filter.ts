import { STATUS_CODES } from 'node:http';
import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, ErrorCode, InvalidParameterError } from './errors.js';
import { isDatabaseUnavailable } from '../database/database-errors.js';
import { codeForStatus, problem, PROBLEM_CONTENT_TYPE, type Problem } from './problem-http.js';

const RETRY_AFTER_SECONDS = 5;

/** Route config: the 4xx answers of a route whose config says so are logged at warn, with their reason. */
export type RefusalLogging = { logRefusals?: boolean };

/**
 * What to tell a client about an error Fastify raised while reading its request, by Fastify's code.
 * Their own messages are not passed on: some carry what the request sent, and an error that merely
 * carries a 4xx statusCode may carry any internal message.
 */
function clientErrorDetail(error: { code?: unknown }, request: FastifyRequest, status: number): string {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return `The body is over the ${request.routeOptions.bodyLimit ?? request.server.initialConfig.bodyLimit} bytes this endpoint takes.`;
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return 'This endpoint does not take a body of this Content-Type.';
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return 'The body is empty, but Content-Type says JSON.';
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return 'The body cannot be parsed as JSON, or holds a __proto__ or constructor.prototype key.';
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return 'The body does not have the length its Content-Length says.';
    case 'ECONNRESET':
      return 'The body was not received completely.';
    case 'FST_ERR_BAD_URL':
      return 'The request URL is not valid: a percent sign must start an escape such as %20.';
    default:
      return STATUS_CODES[status] ?? 'The request was refused.';
  }
}

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
    // What a library said underneath one of our errors: for the log, never for the answer.
    const cause = (error as { cause?: unknown } | null)?.cause;
    const causeMessage = cause instanceof Error ? { cause: cause.message } : {};
    if (away) {
      this.logger.warn({ err: (error as Error).message, ...causeMessage, reqId: request.id, msg: body.code.replaceAll('_', ' ') });
    } else if (body.code === ErrorCode.ServiceUnavailable) {
      // readiness saying what is down: an expected state, one line, no stack
      this.logger.warn({ reqId: request.id, url: request.url, msg: 'not ready' });
    } else if (body.status >= 500) {
      this.logger.error({ err: error, reqId: request.id, msg: 'request failed' });
    } else if ((request.routeOptions?.config as RefusalLogging | undefined)?.logRefusals) {
      // What was refused and why, in our words; never the body.
      this.logger.warn({
        reqId: request.id,
        route: request.routeOptions.url,
        params: request.params,
        status: body.status,
        code: body.code,
        reason: body.detail,
        ...causeMessage,
        msg: 'request refused',
      });
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
      // Fastify's own 4xx errors arrive wrapped in an HttpException (FastifyAdapter.mapException) with their message.
      const fastifyError = error.cause instanceof Error && error.cause.name === 'FastifyError' ? (error.cause as Error & { code?: unknown }) : undefined;
      const detail =
        status >= 500 ? 'The server could not complete the request.' : fastifyError ? clientErrorDetail(fastifyError, request, status) : error.message;
      return { ...problem(code, detail, { instance }), status };
    }
    // First: an error reading the request (the client went away mid-body: ECONNRESET) is the client's, not the database's.
    const status = (error as { statusCode?: unknown })?.statusCode;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      // Fastify errors (malformed URL, unsupported media type, body too large...) carry a client status.
      return { ...problem(codeForStatus(status), clientErrorDetail(error as { code?: unknown }, request, status), { instance }), status };
    }
    if (isDatabaseUnavailable(error)) {
      return problem(ErrorCode.DatabaseUnavailable, 'The database is not answering right now; retry after the Retry-After delay.', { instance });
    }
    return problem(ErrorCode.Internal, 'The server could not complete the request.', { instance });
  }
}
