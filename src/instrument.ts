/**
 * The first import of `main.ts`: the `.env` file (for the OTEL_* variables too), then OpenTelemetry when an
 * OTLP endpoint is set, before any instrumented module (Fastify, pg, pino, undici) is imported.
 */
import { loadEnvFile } from './startup/env-file.js';
import { startTracing } from './telemetry/tracing.js';
import { TracingConfigError } from './telemetry/tracing-config.js';

loadEnvFile();
try {
  await startTracing();
} catch (error) {
  if (!(error instanceof TracingConfigError)) throw error;
  // As loadConfig's errors are reported (main.ts): for the person fixing their environment.
  process.stderr.write(`Invalid configuration:\n  - ${error.message}\n`);
  process.exit(78);
}
