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
import { RedactingSpanExporter } from './redacting-exporter.js';
import { SERVICE_NAME, untracedPath } from './trace-context.js';
import { otlpProtocol } from './tracing-config.js';

/**
 * The NodeSDK with traces only (the gateway's metrics are Prometheus's, its logs pino's): the OTLP exporter
 * of the configured protocol behind the redaction (redacting-exporter.ts), the sampler, resource and
 * propagators from the standard variables, and the instrumentations of what a request goes through.
 * Answers the SDK's shutdown, which sends what is still buffered.
 */
export async function startSdk(env: NodeJS.ProcessEnv): Promise<() => Promise<void>> {
  // The instrumentations patch what is imported as well as what is required: the gateway, NestJS and
  // some of what they load are ES modules, which only a loader hook sees.
  const { registerOptions, waitForAllMessagesAcknowledged } = createAddHookMessageChannel();
  register('import-in-the-middle/hook.mjs', import.meta.url, registerOptions);
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
      // Names the server span after the route template (through the RPC metadata of the HTTP span); the
      // hooks' and handler's spans would only repeat it.
      new FastifyOtelInstrumentation({ registerOnInitialization: true, instrumentHooks: false, instrumentHandler: false, ignorePaths: (route) => untracedPath(route.url) }),
      // Statements of background work outside a delivery's span (polls, leases, retention) are not traced.
      new PgInstrumentation({ requireParentSpan: true }),
      new UndiciInstrumentation({ requireParentforSpans: true }),
      new PinoInstrumentation(),
    ],
  });
  sdk.start();
  // The loader has the instrumentations' hooks before anything they patch is imported.
  await waitForAllMessagesAcknowledged();
  return () => sdk.shutdown();
}
