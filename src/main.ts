// First the .env file and, when an OTLP endpoint is set, tracing: its hooks must be in place before any
// instrumented module (Fastify, pg, pino, undici) is imported, so the server is imported only after it.
import './instrument.js';

await import('./server.js');
