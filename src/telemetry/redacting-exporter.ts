import type { ExportResult } from '@opentelemetry/core';
import type { Attributes } from '@opentelemetry/api';
import type { tracing } from '@opentelemetry/sdk-node';

/**
 * Attributes the instrumentations record that may hold what must never leave the gateway: raw paths and
 * URLs (document ids, an endpoint's query string with a client's token), and exceptions' messages and
 * stack traces. The route template (`http.route`), methods, statuses, addresses and statements stay.
 */
const DROPPED_ATTRIBUTES = new Set([
  'http.url',
  'http.target',
  'url.full',
  'url.path',
  'url.query',
  'http.request.header.authorization',
  'exception.message',
  'exception.stacktrace',
]);

export function redactedAttributes(attributes: Attributes): Attributes {
  let kept: Attributes | undefined;
  for (const key of Object.keys(attributes)) {
    if (!DROPPED_ATTRIBUTES.has(key)) continue;
    kept ??= { ...attributes };
    delete kept[key];
  }
  return kept ?? attributes;
}

/** A finished span as exported: the same span without the attributes above, and without its status message. */
export function redactedSpan(span: tracing.ReadableSpan): tracing.ReadableSpan {
  return {
    name: span.name,
    kind: span.kind,
    spanContext: () => span.spanContext(),
    parentSpanContext: span.parentSpanContext,
    startTime: span.startTime,
    endTime: span.endTime,
    status: { code: span.status.code },
    attributes: redactedAttributes(span.attributes),
    links: span.links,
    events: span.events.map((event) => (event.attributes ? { ...event, attributes: redactedAttributes(event.attributes) } : event)),
    duration: span.duration,
    ended: span.ended,
    resource: span.resource,
    instrumentationScope: span.instrumentationScope,
    droppedAttributesCount: span.droppedAttributesCount,
    droppedEventsCount: span.droppedEventsCount,
    droppedLinksCount: span.droppedLinksCount,
  };
}

/** The OTLP exporter behind the redaction: whatever an instrumentation records, only redacted spans leave. */
export class RedactingSpanExporter implements tracing.SpanExporter {
  constructor(private readonly exporter: tracing.SpanExporter) {}

  export(spans: tracing.ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    this.exporter.export(spans.map(redactedSpan), resultCallback);
  }

  shutdown(): Promise<void> {
    return this.exporter.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.exporter.forceFlush?.() ?? Promise.resolve();
  }
}
