import { register } from 'node:module';
import { FastifyOtelInstrumentation } from '@fastify/otel';
import { OTLPTraceExporter as GrpcTraceExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { PinoInstrumentation } from '@opentelemetry/instrumentation-pino';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { NodeSDK, tracing } from '@opentelemetry/sdk-node';
import { createAddHookMessageChannel } from 'import-in-the-middle';
import { register as registerInThread, supportsSyncHooks } from 'import-in-the-middle/register-hooks.mjs';
import { RedactingSpanExporter } from './redacting-exporter.js';
import { SERVICE_NAME, untracedPath } from './trace-context.js';
import { otlpProtocol } from './tracing-config.js';

/** How long the loader thread may take to acknowledge the instrumentations' hooks before start-up fails. */
const LOADER_ACK_TIMEOUT_MS = 10_000;

/**
 * The loader hook through which the instrumentations patch what is imported as well as what is required:
 * the gateway, NestJS and some of what they load are ES modules, which only a loader hook sees. In the
 * application's thread where Node supports it (22.22.3, 24.11.1 and later); on Node 20 on the loader thread,
 * which must have acknowledged the instrumentations' hooks before anything they patch is imported. Call
 * the answer once the instrumentations exist.
 */
function hookImports(): () => Promise<void> {
  if (supportsSyncHooks()) {
    registerInThread();
    return async () => undefined;
  }
  const { registerOptions, waitForAllMessagesAcknowledged } = createAddHookMessageChannel();
  register('import-in-the-middle/hook.mjs', import.meta.url, registerOptions);
  return () =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the module loader hook did not answer within ${LOADER_ACK_TIMEOUT_MS} ms`)), LOADER_ACK_TIMEOUT_MS);
      waitForAllMessagesAcknowledged()
        .then(resolve, reject)
        .finally(() => clearTimeout(timer));
    });
}

/**
 * The NodeSDK with traces only (the gateway's metrics are Prometheus's, its logs pino's): the OTLP exporter
 * of the configured protocol behind the redaction (redacting-exporter.ts), the sampler, resource and
 * propagators from the standard variables, and the instrumentations of what a request goes through.
 * Answers the SDK's shutdown, which sends what is still buffered.
 */
export async function startSdk(env: NodeJS.ProcessEnv): Promise<() => Promise<void>> {
  const hooked = hookImports();
  const protocol = otlpProtocol(env);
  // Each exporter reads the endpoint, headers, timeout and compression variables itself.
  const exporter = protocol === 'grpc' ? new GrpcTraceExporter() : protocol === 'http/json' ? new JsonTraceExporter() : new ProtobufTraceExporter();
  const sdk = new NodeSDK({
    serviceName: env.OTEL_SERVICE_NAME?.trim() ? undefined : SERVICE_NAME,
    spanProcessors: [new tracing.BatchSpanProcessor(new RedactingSpanExporter(exporter))],
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [
      new HttpInstrumentation({
        // Probes and scrapes every few seconds would bury the requests.
        ignoreIncomingRequestHook: (request) => untracedPath(request.url ?? ''),
      }),
      // Names the server span after the route template (through the RPC metadata of the HTTP span). No
      // span per hook or handler: the statements beneath tell where a request's time went.
      new FastifyOtelInstrumentation({
        registerOnInitialization: true,
        instrumentHooks: false,
        instrumentHandler: false,
        ignorePaths: (route) => untracedPath(route.url),
      }),
      // Statements of background work outside a delivery's span (polls, leases, retention) are not traced.
      new PgInstrumentation({ requireParentSpan: true }),
      new UndiciInstrumentation({ requireParentforSpans: true }),
      new PinoInstrumentation(),
    ],
  });
  sdk.start();
  await hooked();
  return () => sdk.shutdown();
}
