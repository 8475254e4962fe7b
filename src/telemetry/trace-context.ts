import { Attributes, context, defaultTextMapSetter, Link, ROOT_CONTEXT, Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { getRPCMetadata, parseTraceParent, W3CTraceContextPropagator } from '@opentelemetry/core';

/**
 * What the gateway's own code says to a trace: attributes on the request's server span, the W3C
 * `traceparent` of that span (stored with a document and its events, so later work can link to it), and
 * the push delivery's span. With tracing off there is no request span, and the API records nothing.
 */

export const SERVICE_NAME = 'tax-document-gateway';

/** The gateway's own attributes on a request's server span. */
export const ATTR_SOURCE = 'gateway.source';
export const ATTR_IDEMPOTENCY_OUTCOME = 'gateway.idempotency.outcome';
export const ATTR_BANK_EVENT_OUTCOME = 'gateway.bank_event.outcome';
export type IdempotencyOutcome = 'created' | 'replayed' | 'in_use' | 'reused';

/** Probes and scrapes: not traced. */
export function untracedPath(path: string): boolean {
  return path.startsWith('/health') || path === '/metrics' || path.startsWith('/metrics?');
}

const w3c = new W3CTraceContextPropagator();

/** The server span of the request being served (the HTTP instrumentation's, found through its RPC metadata). */
function requestSpan(): Span | undefined {
  return getRPCMetadata(context.active())?.span;
}

/** Attributes on the request's server span; never a key, token, secret, body or signature. */
export function annotateRequest(attributes: Attributes): void {
  requestSpan()?.setAttributes(attributes);
}

/** The request's server span as a W3C `traceparent`; null when it is not traced. */
export function requestTraceParent(): string | null {
  const span = requestSpan();
  if (!span) return null;
  const carrier: Record<string, string> = {};
  w3c.inject(trace.setSpan(ROOT_CONTEXT, span), carrier, defaultTextMapSetter);
  return carrier.traceparent ?? null;
}

/** Links the request's server span to the span a stored `traceparent` names (the trace that created a document). */
export function linkRequestTo(traceParent: string | null | undefined): void {
  const link = linkOf(traceParent);
  if (link) requestSpan()?.addLink(link);
}

function linkOf(traceParent: string | null | undefined): Link | undefined {
  const spanContext = traceParent ? parseTraceParent(traceParent) : null;
  return spanContext ? { context: spanContext } : undefined;
}

/** Runs `work` outside the current trace: background work that a request only set off is not part of it. */
export function outsideTrace<T>(work: () => T): T {
  return context.with(ROOT_CONTEXT, work);
}

/**
 * Runs `work` in a span of its own trace, linked to `traceParent` (the request that produced the event),
 * so that what `work` sends (the push delivery's HTTP request) carries this span's `traceparent`.
 * `outcome` names the result on the span. Without tracing the API's tracer makes a span that records nothing.
 */
export async function inLinkedSpan<T>(
  name: string,
  traceParent: string | null | undefined,
  attributes: Attributes,
  work: () => Promise<T>,
  outcome: (result: T) => Attributes & { failed?: boolean },
): Promise<T> {
  const link = linkOf(traceParent);
  const span = trace.getTracer(SERVICE_NAME).startSpan(name, { kind: SpanKind.INTERNAL, root: true, links: link ? [link] : [], attributes }, ROOT_CONTEXT);
  try {
    const result = await context.with(trace.setSpan(ROOT_CONTEXT, span), work);
    const { failed, ...said } = outcome(result);
    span.setAttributes(said);
    if (failed) span.setStatus({ code: SpanStatusCode.ERROR });
    return result;
  } finally {
    span.end();
  }
}
