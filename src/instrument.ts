/**
 * The only static import of `main.ts`, which imports the server after it: the `.env` file (for the OTEL_*
 * variables too), then OpenTelemetry when an OTLP endpoint is set, before any instrumented module (Fastify,
 * pg, pino, undici) is imported.
 */
import { loadEnvFile } from './startup/env-file.js';
import { startTracing } from './telemetry/tracing.js';
import { TracingConfigError } from './telemetry/tracing-config.js';

loadEnvFile();
try {
  await startTracing();
} catch (error) {
  if (!(error instanceof TracingConfigError)) {
    // One line, as the server's own start-up failures are, never a stack trace.
    process.stderr.write(`Start-up failed: tracing could not start: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  }
  // As loadConfig's errors are reported (server.ts): for the person fixing their environment.
  process.stderr.write(`Invalid configuration:\n  - ${error.message}\n`);
  process.exit(78);
}
