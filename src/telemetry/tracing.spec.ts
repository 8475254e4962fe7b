import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import type { tracing } from '@opentelemetry/sdk-node';
import { redactedSpan } from './redacting-exporter.js';
import { untracedPath } from './trace-context.js';
import { tracingRequested } from './tracing.js';
import { otlpProtocol, TracingConfigError } from './tracing-config.js';

describe('tracingRequested', () => {
  it('is on with an OTLP endpoint for all signals or for traces, unless the SDK is disabled', () => {
    expect(tracingRequested({})).toBe(false);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: '' })).toBe(false);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' })).toBe(false);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })).toBe(true);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' })).toBe(true);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SDK_DISABLED: 'TRUE' })).toBe(false);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SDK_DISABLED: 'false' })).toBe(true);
  });
});

describe('otlpProtocol', () => {
  it('is http/protobuf by default; the traces variable wins over the general one', () => {
    expect(otlpProtocol({})).toBe('http/protobuf');
    expect(otlpProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })).toBe('http/json');
    expect(otlpProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc' })).toBe('grpc');
    expect(() => otlpProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http' })).toThrow(TracingConfigError);
  });
});

describe('untracedPath', () => {
  it('leaves out probes and scrapes only', () => {
    expect(['/health/live', '/health/ready', '/metrics'].every(untracedPath)).toBe(true);
    expect(['/api/v1/documents', '/admin/api-keys', '/metricsx'].some(untracedPath)).toBe(false);
  });
});

describe('redactedSpan', () => {
  const span = {
    name: 'GET /api/v1/documents/:id',
    kind: SpanKind.SERVER,
    spanContext: () => ({ traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), traceFlags: 1 }),
    startTime: [1, 0],
    endTime: [2, 0],
    status: { code: SpanStatusCode.ERROR, message: 'invalid input syntax for type uuid: "DE123"' },
    attributes: {
      'http.route': '/api/v1/documents/:id',
      'url.path': '/api/v1/documents/0d9c',
      'url.query': 'token=s3cret',
      'http.target': '/x/1',
      'http.url': 'http://h/x/1',
      'url.full': 'http://h/hook?token=s3cret',
      'http.response.status_code': 500,
    },
    links: [],
    events: [
      {
        name: 'exception',
        time: [1, 5],
        attributes: { 'exception.type': 'QueryFailedError', 'exception.message': 'value "DE123"', 'exception.stacktrace': 'at secret.ts:1' },
      },
    ],
    duration: [1, 0],
    ended: true,
    resource: {},
    instrumentationScope: { name: 'test' },
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  } as unknown as tracing.ReadableSpan;

  it('drops raw paths, URLs, query strings, exception messages, stack traces and the status message, and keeps the rest', () => {
    const redacted = redactedSpan(span);
    expect(redacted.attributes).toEqual({ 'http.route': '/api/v1/documents/:id', 'http.response.status_code': 500 });
    expect(redacted.events[0].attributes).toEqual({ 'exception.type': 'QueryFailedError' });
    expect(redacted.status).toEqual({ code: SpanStatusCode.ERROR });
    expect(redacted.spanContext()).toEqual(span.spanContext());
    expect(redacted.name).toBe(span.name);
  });
});
