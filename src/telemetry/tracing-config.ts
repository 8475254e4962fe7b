/** A tracing variable the gateway cannot honour: reported as the configuration's errors are, exit code 78. */
export class TracingConfigError extends Error {}

export type OtlpProtocol = 'http/protobuf' | 'http/json' | 'grpc';

/** The traces' protocol, as the OTLP exporter specification reads the variables; http/protobuf by default. */
export function otlpProtocol(env: NodeJS.ProcessEnv): OtlpProtocol {
  const value = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim() || env.OTEL_EXPORTER_OTLP_PROTOCOL?.trim() || 'http/protobuf').toLowerCase();
  if (value === 'http/protobuf' || value === 'http/json' || value === 'grpc') return value;
  throw new TracingConfigError(`OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf, http/json or grpc (got "${value}")`);
}
