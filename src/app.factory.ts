import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { AppModule, AppModuleOptions } from './app.module.js';
import { registerHttpHooks, requestIdsFor } from './common/http-hooks.js';
import { answerClientError, answerFrameworkError, trackResponses } from './common/http-layer-errors.js';
import { limitConnectionsPerClient } from './common/connection-limits.js';
import { KnownRoutes } from './common/known-routes.js';
import { TrustedProxies } from './common/trusted-proxies.js';
import { registerJsonBodyParser } from './common/json-body-parser.js';
import { registerSecurityHeaders } from './common/security-headers.js';
import { IdempotencyCoverage } from './idempotency/idempotency-coverage.js';
import { AppLogger, PINO_LOGGER } from './logging/app-logger.js';
import { registerRequestLog } from './logging/logging.module.js';
import { configuredSecrets, secretCheck } from './logging/redact-url.js';
import { MetricsService } from './metrics/metrics.service.js';
import { setupOpenApi } from './openapi/setup-openapi.js';
import { BANK_WEBHOOK_PATH } from './webhooks/webhook-signature.js';

/**
 * Every response's policy (the console sets a stricter one of its own): only this origin's scripts,
 * no framing. Swagger UI at /docs needs its inline styles and data: images, nothing else.
 */
const DEFAULT_CSP = {
  defaultSrc: ["'self'"],
  scriptSrc: ["'self'"],
  styleSrc: ["'self'", "'unsafe-inline'"],
  imgSrc: ["'self'", 'data:'],
  connectSrc: ["'self'"],
  objectSrc: ["'none'"],
  frameAncestors: ["'none'"],
  baseUri: ["'none'"],
  formAction: ["'self'"],
  // Helmet's default would send a browser on plain HTTP (a gateway behind a TLS-terminating proxy, or
  // tried out on a LAN address) to https:// for every script and style, breaking /docs there.
  upgradeInsecureRequests: null,
};

/**
 * Builds the application exactly as production runs it; tests call this too, so they get the same
 * adapter options, hooks, filters, guards and interceptors.
 */
export async function createApp(options: AppModuleOptions): Promise<NestFastifyApplication> {
  const { config } = options;
  const trustedProxies = TrustedProxies.parse(config.TRUSTED_PROXIES);
  const adapter = new FastifyAdapter({
    // request.ip: the client's address, taken from X-Forwarded-For only through a trusted proxy.
    trustProxy: trustedProxies.fastifyOption(),
    bodyLimit: config.BODY_LIMIT_BYTES,
    genReqId: requestIdsFor(secretCheck(configuredSecrets(config))),
    requestIdHeader: false,
    // Slow clients: the whole request (a trickled body included) and its headers must arrive in time,
    // and an idle keep-alive connection is closed. Node checks these every second rather than every 30 s.
    requestTimeout: config.HTTP_REQUEST_TIMEOUT_MS,
    keepAliveTimeout: config.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    http: { headersTimeout: config.HTTP_HEADERS_TIMEOUT_MS, connectionsCheckingInterval: 1000 },
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: answerClientError,
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
  fastify.server.maxConnections = config.HTTP_MAX_CONNECTIONS;
  trackResponses(fastify.server);
  limitConnectionsPerClient(fastify.server, config.HTTP_MAX_CONNECTIONS_PER_CLIENT, trustedProxies);
  registerSecurityHeaders(fastify, { contentSecurityPolicy: { directives: DEFAULT_CSP }, frameguard: { action: 'deny' } });
  // The bank webhook verifies a signature over its raw bytes, whatever their media type.
  const rawBodyRoutes = [BANK_WEBHOOK_PATH];
  registerHttpHooks(fastify, rawBodyRoutes);
  // After the hooks every answer gets (security headers, request id); before the routes are registered
  // (by app.init below), so that it sees every one of them.
  new KnownRoutes().collectFrom(fastify);
  const idempotency = new IdempotencyCoverage();
  idempotency.watch(fastify);
  registerRequestLog(fastify, app.get(PINO_LOGGER));
  registerJsonBodyParser(fastify, rawBodyRoutes, config.BODY_LIMIT_BYTES);
  app.get(MetricsService).instrument(fastify);
  setupOpenApi(app, { rawBodyRoutes });
  await app.init();
  idempotency.assertComplete();
  await fastify.ready();
  return app;
}
