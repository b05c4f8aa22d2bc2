import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { SwaggerModule } from '@nestjs/swagger';
import type { Logger } from 'pino';
import { AppModule, type AppModuleOptions } from './app.module.js';
import { ErrorCode } from './common/errors.js';
import { PinoNestLogger } from './common/logger.js';
import { problem, PROBLEM_CONTENT_TYPE } from './common/problem-http.js';
import { frameworkProblem, PathParameters } from './common/framework-errors.js';
import type { Metrics } from './metrics/metrics.js';
import { METRICS } from './metrics/metrics.module.js';
import { buildOpenApiDocument } from './common/openapi-document.js';
import { applyNotificationRouteOptions } from './store-notifications/notification-routes.js';
import { applyPurchaseRouteOptions } from './purchases/purchase-routes.js';
import fastifyCompress from '@fastify/compress';
import { constants as zlibConstants } from 'node:zlib';

export const MAX_HEADER_BYTES = 256 * 1024;
/** The longest path parameter the router passes on, in decoded characters: well over a username's 512 UTF-8 bytes. */
const MAX_PARAM_LENGTH = 3 * 512;
const REQUEST_ID = /^[\x21-\x7e]{1,128}$/;
/** Probes and scrapes come every few seconds: their request logs are debug, not info. */
const QUIET_ROUTES = /^\/(health\/|metrics$)/;

/**
 * Node's HTTP server bounds the time to receive a request (`requestTimeout`, headers and body) and its
 * headers (`headersTimeout`), but only checks open requests every `connectionsCheckingInterval` (30 s
 * by default), and where headersTimeout is the longer of the two it bounds the whole request instead.
 * Fastify's own `requestTimeout` option is set on the server after Node derived headersTimeout from
 * it, leaving Node's 60 s: a body trickled a byte at a time was held 60-90 s. Both deadlines are set
 * here, checked every tenth of REQUEST_TIMEOUT_MS (at most every second) and that much shorter, so
 * a request not received within REQUEST_TIMEOUT_MS of its first byte is answered 408 by then.
 */
export function requestDeadlines(requestTimeoutMs: number): { requestTimeout: number; headersTimeout: number; connectionsCheckingInterval: number } {
  const connectionsCheckingInterval = Math.max(10, Math.min(1000, Math.floor(requestTimeoutMs / 10)));
  const deadline = requestTimeoutMs - connectionsCheckingInterval;
  return { requestTimeout: deadline, headersTimeout: deadline, connectionsCheckingInterval };
}

/** Headers of every answer: nothing is to be stored by a cache, nor sniffed as another type (problems echo request input). */
const ANSWER_HEADERS = { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' } as const;

/**
 * Requests Node's HTTP parser refuses before any route runs (request line and headers over
 * MAX_HEADER_BYTES, malformed HTTP, too slow) get a problem+json answer like every other error.
 */
function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  // Nothing can be said once a response has started on this socket: it is closed.
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (!socket.writable || inFlight?.headersSent) {
    socket.destroy(error);
    return;
  }
  const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const detail =
    status === 431
      ? `The request line and headers exceed ${MAX_HEADER_BYTES} bytes; ask for fewer applicationUsername values per request.`
      : status === 408
        ? 'The request was not received in time.'
        : 'The request is not valid HTTP.';
  const body = JSON.stringify(problem(ErrorCode.BadRequest, detail, { status, title: STATUS_CODES[status] ?? 'Bad request' }));
  const headers = Object.entries(ANSWER_HEADERS)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: ${PROBLEM_CONTENT_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${headers}Connection: close\r\n\r\n${body}`,
  );
}

/** Builds the HTTP application; main.ts listens on it and the e2e tests drive it on an ephemeral port. */
export async function createHttpApp(options: AppModuleOptions & { pino: Logger }): Promise<NestFastifyApplication> {
  const deadlines = requestDeadlines(options.config.requestTimeoutMs);
  // Filled as routes are registered; read only when the router refuses a request.
  const pathParameters = new PathParameters();
  const adapter = new FastifyAdapter({
    // No Nest middleware is configured here: without @fastify/middie no request runs its onRequest hook
    // for nothing (bench/notes.md, issue 25). Nest refuses to start if middleware is ever added.
    skipMiddie: true,
    loggerInstance: options.pino,
    // A caller's x-request-id is kept only when short and printable (it is echoed and logged).
    requestIdHeader: false,
    genReqId: (request: IncomingMessage) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    // Room for the documented maximum username list (1000 names averaging up to ~200 encoded bytes).
    // Time to receive a whole request, headers and body; database time is bounded by STATEMENT_TIMEOUT_MS (then 503).
    http: { maxHeaderSize: MAX_HEADER_BYTES, ...deadlines },
    // A path parameter may be a whole username (DELETE /v2/customers/{applicationUsername}): up to
    // 512 UTF-8 bytes (the router's default, 100 characters, refused most). Longer ones up to
    // MAX_PARAM_LENGTH reach the route's own check; beyond it frameworkErrors answers the same 400.
    // (routerOptions: Fastify 5 deprecates router settings at the top level, FSTDEP022, printed at every start)
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    requestTimeout: deadlines.requestTimeout,
    clientErrorHandler: answerClientError,
    // The router refuses a malformed URL or an over-long parameter before any hook runs, onSend
    // included, and would answer its own JSON (414 FST_ERR_MAX_PARAM_LENGTH, 400 FST_ERR_BAD_URL with
    // its message): such answers are problems like every other, naming the parameter at fault, with
    // the headers every answer carries here.
    frameworkErrors: (error: Error, request: FastifyRequest, reply: FastifyReply) => {
      const body = frameworkProblem(error, { method: request.raw.method ?? 'GET', url: request.raw.url ?? '/' }, pathParameters, MAX_PARAM_LENGTH);
      void reply
        .status(body.status)
        .headers({ ...ANSWER_HEADERS, 'x-request-id': request.id, 'content-type': PROBLEM_CONTENT_TYPE })
        .send(JSON.stringify(body));
    },
  });
  // A route's logLevel is a floor: probes and scrapes log their request lines only at debug or trace.
  const verbose = options.config.logLevel === 'debug' || options.config.logLevel === 'trace';
  adapter.getInstance().addHook('onRoute', (route) => {
    pathParameters.add(route.method, route.url);
    if (!verbose && QUIET_ROUTES.test(route.url)) route.logLevel = 'warn';
    applyNotificationRouteOptions(route, options.config);
    applyPurchaseRouteOptions(route);
  });
  adapter.getInstance().addHook('onSend', async (request, reply) => {
    void reply.header('x-request-id', request.id);
    // Answers are per token (or problems, probes): none is for a cache to keep, unless a route says otherwise.
    if (!reply.hasHeader('cache-control')) void reply.header('cache-control', ANSWER_HEADERS['cache-control']);
    void reply.header('x-content-type-options', ANSWER_HEADERS['x-content-type-options']);
  });
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(options), adapter, {
    logger: new PinoNestLogger(options.pino),
    bufferLogs: false,
    // Nest's default exits the process when a module fails to start (a failed migration, say), which
    // skips main()'s clean-up and orphans the embedded PostgreSQL this process started: throw instead.
    abortOnError: false,
  });
  // Pages are JSON with repeated keys: a 1000-row page shrinks about tenfold (docs/benchmarks-compression.md).
  await app.register(fastifyCompress, { encodings: ['br', 'gzip'], threshold: 1024, brotliOptions: { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 4 } } });
  if (options.config.corsOrigins.length > 0) {
    app.enableCors({
      origin: [...options.config.corsOrigins],
      methods: ['GET', 'HEAD', 'POST'],
      allowedHeaders: ['authorization', 'content-type', 'x-request-id'],
      exposedHeaders: ['x-request-id', 'retry-after', 'www-authenticate'],
      maxAge: 600,
    });
  }

  const document = buildOpenApiDocument(app);
  const metrics = app.get<Metrics>(METRICS);
  adapter.getInstance().addHook('onResponse', async (request, reply) => {
    metrics.httpDuration.observe(
      { method: request.method, route: request.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
  });

  SwaggerModule.setup('docs', app, document, {
    jsonDocumentUrl: 'openapi.json',
    useGlobalPrefix: false,
    swaggerUiEnabled: options.config.docsUiEnabled,
  });
  return app;
}
