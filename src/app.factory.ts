import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { Logger } from 'nestjs-pino';
import { AppModule, AppModuleOptions } from './app.module';
import { registerHttpHooks, requestIdFor } from './common/http-hooks';
import { registerJsonBodyParser } from './common/json-body-parser';
import { MetricsService } from './metrics/metrics.service';
import { BANK_WEBHOOK_PATH } from './webhooks/webhook-signature';

function setupOpenApi(app: NestFastifyApplication): void {
  const document = SwaggerModule.createDocument(
    app,
    new DocumentBuilder()
      .setTitle('Tax Document Gateway')
      .setDescription('Documents API for client applications, the bank payment webhook, and operations endpoints.')
      .setVersion('1')
      .addApiKey({ type: 'apiKey', in: 'header', name: 'X-API-Key' }, 'apiKey')
      .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'ADMIN_TOKEN, for /admin' })
      .build(),
  );
  SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'docs/openapi.json', yamlDocumentUrl: 'docs/openapi.yaml' });
}

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
  app.useLogger(app.get(Logger));
  app.flushLogs();
  const fastify = app.getHttpAdapter().getInstance();
  registerHttpHooks(fastify, [BANK_WEBHOOK_PATH]);
  registerJsonBodyParser(fastify, [BANK_WEBHOOK_PATH]);
  app.get(MetricsService).instrument(fastify);
  setupOpenApi(app);
  await app.init();
  await fastify.ready();
  return app;
}
