import { getMetadataStorage } from 'class-validator';
import { AppConfig, loadConfig } from '../../src/config/app-config.js';
import { readEnvExample, statedDefault } from './env-example.js';

/** Read by docker-compose.yml only, never by the gateway. */
const COMPOSE_ONLY = new Set(['PUBLISH_ADDRESS', 'COMPOSE_PROFILES', 'POSTGRES_USER', 'POSTGRES_PASSWORD', 'POSTGRES_DB']);

/**
 * Variables of the README's Configuration that .env.example lists (commented out, with the documented
 * defaults) before the configuration class has them. Each is checked like any other as soon as AppConfig
 * declares it; until then it may only be commented out.
 */
const ANNOUNCED = new Set([
  'TRUSTED_PROXIES',
  'REDIS_URL',
  'SHUTDOWN_DELAY_SECONDS',
  'OIDC_ISSUER_URL',
  'OIDC_CLIENT_ID',
  'OIDC_CLIENT_SECRET',
  'ADMIN_SESSION_IDLE_SECONDS',
  'ADMIN_SESSION_MAX_SECONDS',
]);

/**
 * OpenTelemetry's standard variables, which the OpenTelemetry SDK reads from the environment (only when tracing
 * starts) rather than the configuration class. Listed commented out: a copied .env must not turn tracing on.
 */
const OPENTELEMETRY = new Set([
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'OTEL_EXPORTER_OTLP_PROTOCOL',
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_SERVICE_NAME',
  'OTEL_RESOURCE_ATTRIBUTES',
  'OTEL_TRACES_SAMPLER',
  'OTEL_TRACES_SAMPLER_ARG',
  'OTEL_PROPAGATORS',
  'OTEL_SDK_DISABLED',
]);

/** Every variable the configuration class declares (each has at least one validation rule), read now. */
const configured = [
  ...new Set(
    getMetadataStorage()
      .getTargetValidationMetadatas(AppConfig, '', false, false)
      .map((m) => m.propertyName),
  ),
];
const defaults = new AppConfig() as unknown as Record<string, string | number | boolean | undefined>;
const defaultOf = (name: string) => (defaults[name] === undefined ? undefined : String(defaults[name]));

describe('.env.example against the configuration class (one source of truth)', () => {
  const entries = readEnvExample();
  const forGateway = entries.filter((e) => configured.includes(e.name));

  it('lists every variable the gateway reads, once', () => {
    const listed = entries.map((e) => e.name);
    expect(configured.filter((name) => !listed.includes(name))).toEqual([]);
    expect(listed.filter((name, i) => listed.indexOf(name) !== i)).toEqual([]);
    expect(configured.length).toBeGreaterThan(30);
  });

  it('lists nothing the gateway does not read, but compose-only, announced and OpenTelemetry variables, the last two commented out', () => {
    const unknown = entries.filter((e) => !configured.includes(e.name) && !COMPOSE_ONLY.has(e.name) && !ANNOUNCED.has(e.name) && !OPENTELEMETRY.has(e.name));
    expect(unknown.map((e) => `line ${e.line}: ${e.name}`)).toEqual([]);
    const setButNotRead = entries.filter((e) => ANNOUNCED.has(e.name) && !configured.includes(e.name) && !e.commented);
    expect(setButNotRead.map((e) => e.name)).toEqual([]);
    expect(entries.filter((e) => OPENTELEMETRY.has(e.name) && !e.commented).map((e) => e.name)).toEqual([]);
  });

  it('lists the standard OpenTelemetry variables the gateway honours, each with the default tracing has without it', () => {
    const listed = new Map(entries.filter((e) => OPENTELEMETRY.has(e.name)).map((e) => [e.name, e]));
    expect([...OPENTELEMETRY].filter((name) => !listed.has(name))).toEqual([]);
    const stated = Object.fromEntries([...listed].map(([name, e]) => [name, statedDefault(e)]));
    expect(stated).toMatchObject({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'unset',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_SERVICE_NAME: 'tax-document-gateway',
      OTEL_TRACES_SAMPLER: 'parentbased_always_on',
      OTEL_PROPAGATORS: 'tracecontext,baggage',
      OTEL_SDK_DISABLED: 'false',
    });
    // A commented default reads as the default itself.
    for (const name of ['OTEL_EXPORTER_OTLP_PROTOCOL', 'OTEL_SERVICE_NAME', 'OTEL_TRACES_SAMPLER', 'OTEL_PROPAGATORS', 'OTEL_SDK_DISABLED']) {
      expect([name, listed.get(name)!.value]).toEqual([name, stated[name]]);
    }
  });

  it('sets only the defaults: a value given is the one the gateway has without it', () => {
    const differing = forGateway
      .filter((e) => !e.commented || defaultOf(e.name) !== undefined)
      .filter((e) => e.value !== defaultOf(e.name))
      .map((e) => `line ${e.line}: ${e.name}=${e.value}, default ${defaultOf(e.name) ?? 'unset'}`);
    expect(differing).toEqual([]);
  });

  it('states each default as the configuration class has it', () => {
    const wrong = forGateway
      .filter((e) => statedDefault(e) !== undefined && defaultOf(e.name) !== undefined && statedDefault(e) !== defaultOf(e.name))
      .map((e) => `line ${e.line}: ${e.name} says (default: ${statedDefault(e)}), the class ${defaultOf(e.name)}`);
    expect(wrong).toEqual([]);
    // A variable without a default says so, unless its comment is shared with the lines below it.
    const unsetSaysOtherwise = forGateway.filter(
      (e) => defaultOf(e.name) === undefined && statedDefault(e) !== undefined && !/unset|user name/.test(statedDefault(e)!),
    );
    expect(unsetSaysOtherwise.map((e) => e.name)).toEqual([]);
  });

  it('gives only values the gateway accepts', () => {
    // Settings that only go together are checked with their companions set.
    const together = [['OIDC_ISSUER_URL', 'OIDC_CLIENT_ID', 'OIDC_CLIENT_SECRET']];
    const companions = (name: string) =>
      Object.fromEntries((together.find((group) => group.includes(name)) ?? []).map((other) => [other, 'a-companion-value']));
    const refused = forGateway
      .filter((e) => e.value !== '')
      .flatMap((e) => {
        try {
          loadConfig({ ...companions(e.name), [e.name]: e.value });
          return [];
        } catch (error) {
          return [`line ${e.line}: ${(error as Error).message}`];
        }
      });
    expect(refused).toEqual([]);
  });
});
