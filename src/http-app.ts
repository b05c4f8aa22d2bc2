import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { SwaggerModule } from '@nestjs/swagger';
import type { Logger } from 'pino';
import { AppModule, type AppModuleOptions } from './app.module.js';
import { ErrorCode } from './common/errors.js';
import { PinoNestLogger } from './common/logger.js';
import { problem, PROBLEM_CONTENT_TYPE } from './common/problem-http.js';
import type { Metrics } from './metrics/metrics.js';
import { METRICS } from './metrics/metrics.module.js';
import { buildOpenApiDocument } from './common/openapi-document.js';
import fastifyCompress from '@fastify/compress';
import { constants as zlibConstants } from 'node:zlib';

export const MAX_HEADER_BYTES = 256 * 1024;
const REQUEST_ID = /^[\x21-\x7e]{1,128}$/;
/** Probes and scrapes come every few seconds: their request logs are debug, not info. */
const QUIET_ROUTES = /^\/(health\/|metrics$)/;

/**
 * Requests Node's HTTP parser refuses before any route runs (request line and headers over
 * MAX_HEADER_BYTES, malformed HTTP, too slow) get a problem+json answer like every other error.
 */
function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  if (!socket.writable) {
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
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: ${PROBLEM_CONTENT_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** Builds the HTTP application; main.ts listens on it and the e2e tests drive it on an ephemeral port. */
export async function createHttpApp(options: AppModuleOptions & { pino: Logger }): Promise<NestFastifyApplication> {
  const adapter = new FastifyAdapter({
    loggerInstance: options.pino,
    // A caller's x-request-id is kept only when short and printable (it is echoed and logged).
    requestIdHeader: false,
    genReqId: (request: IncomingMessage) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    // Room for the documented maximum username list (1000 names averaging up to ~200 encoded bytes).
    http: { maxHeaderSize: MAX_HEADER_BYTES },
    // Time to receive a whole request; database time is bounded by STATEMENT_TIMEOUT_MS (then 503).
    requestTimeout: options.config.requestTimeoutMs,
    clientErrorHandler: answerClientError,
  });
  // A route's logLevel is a floor: probes and scrapes log their request lines only at debug or trace.
  const verbose = options.config.logLevel === 'debug' || options.config.logLevel === 'trace';
  adapter.getInstance().addHook('onRoute', (route) => {
    if (!verbose && QUIET_ROUTES.test(route.url)) route.logLevel = 'warn';
  });
  adapter.getInstance().addHook('onSend', async (request, reply) => {
    void reply.header('x-request-id', request.id);
  });
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(options), adapter, {
    logger: new PinoNestLogger(options.pino),
    bufferLogs: false,
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
