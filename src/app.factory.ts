import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { AppModule, AppModuleOptions } from './app.module';
import { registerHttpHooks, requestIdFor } from './common/http-hooks';
import { registerJsonBodyParser } from './common/json-body-parser';
import { AppLogger } from './logging/app-logger';
import { MetricsService } from './metrics/metrics.service';
import { setupOpenApi } from './openapi/setup-openapi';
import { BANK_WEBHOOK_PATH } from './webhooks/webhook-signature';

/**
 * Builds the application exactly as production runs it; tests call this too, so they get the same
 * adapter options, hooks, filters, guards and interceptors.
 */
export async function createApp(options: AppModuleOptions): Promise<NestFastifyApplication> {
  const adapter = new FastifyAdapter({
    bodyLimit: options.config.BODY_LIMIT_BYTES,
    genReqId: requestIdFor,
    requestIdHeader: false,
    // Drain on close: Node closes idle sockets itself, while requests already received run to the end
    // (Fastify's default would cut every connection, in-flight ones included).
    forceCloseConnections: false,
    return503OnClosing: false,
  });
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(options), adapter, {
    bodyParser: false,
    bufferLogs: true,
    abortOnError: false,
  });
  app.useLogger(app.get(AppLogger));
  app.flushLogs();
  const fastify = app.getHttpAdapter().getInstance();
  // The bank webhook verifies a signature over its raw bytes, whatever their media type.
  const rawBodyRoutes = [BANK_WEBHOOK_PATH];
  registerHttpHooks(fastify, rawBodyRoutes);
  registerJsonBodyParser(fastify, rawBodyRoutes);
  app.get(MetricsService).instrument(fastify);
  setupOpenApi(app, { anyMediaTypeRoutes: rawBodyRoutes });
  await app.init();
  await fastify.ready();
  return app;
}
