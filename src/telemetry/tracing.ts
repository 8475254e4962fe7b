/**
 * Whether traces are exported, decided once at start from the standard OpenTelemetry variables. The SDK
 * and its instrumentations are loaded only when they are: without an endpoint nothing is started, and the
 * request path's calls into `@opentelemetry/api` find no span and do nothing.
 */
let stop: (() => Promise<void>) | undefined;

/** An OTLP endpoint is set (for all signals or for traces), and the SDK is not switched off. */
export function tracingRequested(env: NodeJS.ProcessEnv): boolean {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  return Boolean(endpoint) && env.OTEL_SDK_DISABLED?.trim().toLowerCase() !== 'true';
}

/**
 * Starts the SDK when `tracingRequested`. Must run before Fastify, pg, pino and undici are first imported:
 * the instrumentations hook `require` and `import`, so `main.ts` imports the server only after `instrument.ts`.
 */
export async function startTracing(env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  if (!tracingRequested(env)) return false;
  // Imported only now, so that the SDK is not even loaded when tracing is off.
  const { startSdk } = await import('./tracing-sdk.js');
  stop = await startSdk(env);
  return true;
}

/** Sends the spans still buffered, then stops the SDK; nothing when tracing is off. */
export async function stopTracing(): Promise<void> {
  const ending = stop;
  stop = undefined;
  await ending?.().catch(() => undefined);
}
