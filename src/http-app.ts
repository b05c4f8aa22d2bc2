import { randomUUID } from 'node:crypto';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import type { Logger } from 'pino';
import { AppModule, type AppModuleOptions } from './app.module.js';
import { PinoNestLogger } from './common/logger.js';
import type { Metrics } from './metrics/metrics.js';
import { METRICS } from './metrics/metrics.module.js';

/** Builds the HTTP application; main.ts listens on it and the e2e tests drive it on an ephemeral port. */
export async function createHttpApp(options: AppModuleOptions & { pino: Logger }): Promise<NestFastifyApplication> {
  const adapter = new FastifyAdapter({
    loggerInstance: options.pino,
    requestIdHeader: 'x-request-id',
    genReqId: () => randomUUID(),
  });
  adapter.getInstance().addHook('onSend', async (request, reply) => {
    void reply.header('x-request-id', request.id);
  });
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(options), adapter, {
    logger: new PinoNestLogger(options.pino),
    bufferLogs: false,
  });

  const document = SwaggerModule.createDocument(
    app,
    new DocumentBuilder()
      .setTitle('Subscription records')
      .setDescription('Customers and in-app purchase transactions per application, from store notifications.')
      .setVersion('2')
      .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' })
      .build(),
  );
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
