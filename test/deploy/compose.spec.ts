import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { loadConfig } from '../../src/config/app-config.js';

const ROOT = join(import.meta.dirname, '..', '..');
const COMPOSE_TEXT = readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8');

type Env = Record<string, string | undefined>;

/** Compose's interpolation of the forms this file uses: `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `$$`. */
function interpolate(value: unknown, env: Env): unknown {
  if (typeof value === 'string') {
    return value.replace(/\$\$|\$\{([A-Z_][A-Z0-9_]*)(?:(:?-)([^}]*))?\}/g, (match, name: string, op: string | undefined, fallback: string) => {
      if (match === '$$') return '$';
      const set = env[name];
      if (op === ':-') return set ? set : fallback;
      if (op === '-') return set !== undefined ? set : fallback;
      return set ?? '';
    });
  }
  if (Array.isArray(value)) return value.map((item) => interpolate(item, env));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, interpolate(item, env)]));
  return value;
}

interface Service {
  image?: string;
  build?: unknown;
  entrypoint?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  ports?: string[];
  networks?: string[];
  network_mode?: string;
  profiles?: string[];
  depends_on?: Record<string, { condition: string; required?: boolean }>;
  healthcheck?: { test: string[] };
  read_only?: boolean;
}
interface Compose {
  services: Record<string, Service>;
  volumes: Record<string, unknown>;
  networks: Record<string, { internal?: boolean }>;
}

/** docker-compose.yml as compose sees it with the given environment (none: a clone without .env). */
const compose = (env: Env = {}) => interpolate(parse(COMPOSE_TEXT), env) as Compose;

/** `volume:/path[:ro]` → the named volume mounted at `path`, if any. */
const namedVolumeAt = (service: Service, path: string) =>
  service.volumes?.map((v) => v.split(':')).find(([source, target]) => target === path && !source.startsWith('.') && !source.startsWith('/'))?.[0];

describe('docker-compose.yml', () => {
  it('keeps the data directory, and so the generated secrets, in a named volume', () => {
    const { services, volumes } = compose();
    const volume = namedVolumeAt(services.app, '/app/.data');
    expect(volume).toBeDefined();
    expect(volumes).toHaveProperty(volume!);
    // The service that writes the database password and the metrics token writes into the same volume.
    expect(services.secrets.volumes).toContain(`${volume}:${services.secrets.entrypoint![2]}`);
    expect(namedVolumeAt(services.postgres, '/var/lib/postgresql/data')).toBe('pgdata');
  });

  it('publishes the gateway on 127.0.0.1 unless PUBLISH_ADDRESS says otherwise, and nothing else but the trace UI on loopback', () => {
    expect(compose().services.app.ports).toEqual(['127.0.0.1:3000:3000']);
    expect(compose({ PORT: '8080' }).services.app.ports).toEqual(['127.0.0.1:8080:3000']);
    expect(compose({ PUBLISH_ADDRESS: '0.0.0.0' }).services.app.ports).toEqual(['0.0.0.0:3000:3000']);
    const { services, networks } = compose();
    // Jaeger's UI answers anyone who reaches it, so never beyond this host; its OTLP ports are not published.
    expect(services.jaeger.ports).toEqual(['127.0.0.1:16686:16686']);
    for (const [name, service] of Object.entries(services)) if (name !== 'app' && name !== 'jaeger') expect([name, service.ports]).toEqual([name, undefined]);
    // The database and Valkey are on an internal network only.
    expect(networks.backend.internal).toBe(true);
    expect(services.postgres.networks).toEqual(['backend']);
    expect(services.redis.networks).toEqual(['backend']);
  });

  it('health-checks PostgreSQL and the gateway, which starts once the database is healthy and the secrets are in place', () => {
    const { services } = compose();
    expect(services.postgres.healthcheck?.test.join(' ')).toContain('pg_isready');
    expect(services.app.healthcheck?.test.join(' ')).toContain('http://127.0.0.1:3000/health/ready');
    expect(services.redis.healthcheck?.test).toEqual(['CMD', 'valkey-cli', 'ping']);
    expect(services.app.depends_on).toMatchObject({
      secrets: { condition: 'service_completed_successfully' },
      postgres: { condition: 'service_healthy' },
      redis: { condition: 'service_healthy', required: false },
    });
    expect(services.postgres.depends_on).toEqual({ secrets: { condition: 'service_completed_successfully' } });
    expect(services.redis.profiles).toEqual(['redis']);
  });

  it('starts a trace collector with the profile `tracing` only, and traces only when OTEL_EXPORTER_OTLP_ENDPOINT is set', () => {
    const { services } = compose();
    expect(services.jaeger.profiles).toEqual(['tracing']);
    expect(services.jaeger.image).toMatch(/^jaegertracing\/jaeger:2\.\d+\.\d+$/);
    // On the network the gateway shares with it, not the internal one of the database.
    expect(services.jaeger.networks).toEqual(['default']);
    expect(services.app.networks).toContain('default');
    expect(services.app.depends_on).toMatchObject({ jaeger: { condition: 'service_started', required: false } });
    // Empty, the default, is off; the documented value names the service and its OTLP/HTTP port.
    expect(services.app.environment!.OTEL_EXPORTER_OTLP_ENDPOINT).toBe('');
    expect(compose({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://jaeger:4318' }).services.app.environment!.OTEL_EXPORTER_OTLP_ENDPOINT).toBe('http://jaeger:4318');
    const documented = [...COMPOSE_TEXT.matchAll(/OTEL_EXPORTER_OTLP_ENDPOINT=(http:\/\/[^\s]+)/g)].map((m) => m[1]);
    expect(documented.length).toBeGreaterThan(0);
    for (const url of documented) expect(new URL(url)).toMatchObject({ hostname: 'jaeger', port: '4318' });
    // No other OTEL_* variable is fixed here: .env (env_file) sets them, and the gateway's default is the SDK's.
    expect(Object.keys(services.app.environment!).filter((name) => name.startsWith('OTEL_'))).toEqual(['OTEL_EXPORTER_OTLP_ENDPOINT']);
  });

  it('has no fixed password: PostgreSQL reads the generated one from a file, the gateway gets it from its data directory', () => {
    const { services } = compose();
    expect(services.postgres.environment).not.toHaveProperty('POSTGRES_PASSWORD');
    const passwordFile = services.postgres.environment!.POSTGRES_PASSWORD_FILE;
    const secretVolume = namedVolumeAt(services.postgres, '/run/postgres-secret');
    expect(passwordFile).toBe('/run/postgres-secret/postgres-password');
    expect(services.secrets.volumes).toContain(`${secretVolume}:${services.secrets.entrypoint![3]}`);
    expect(services.app.environment).not.toHaveProperty('PGPASSWORD');
    expect(services.app.environment).not.toHaveProperty('METRICS_TOKEN');
    // The values from .env reach the service that writes the files, and nothing else sets them.
    expect(compose({ POSTGRES_PASSWORD: 'from-env', METRICS_TOKEN: 'token-from-env' }).services.secrets.environment).toEqual({
      POSTGRES_PASSWORD: 'from-env',
      METRICS_TOKEN: 'token-from-env',
    });
    expect(services.secrets.network_mode).toBe('none');
    expect(services.app.read_only).toBe(true);
  });

  it('documents every variable it reads in .env.example', () => {
    const example = readFileSync(join(ROOT, '.env.example'), 'utf8');
    const used = [...new Set([...COMPOSE_TEXT.matchAll(/\$\{([A-Z_][A-Z0-9_]*)/g)].map((m) => m[1]))];
    const undocumented = used.filter((name) => !new RegExp(`^(# ?)?${name}=`, 'm').test(example));
    expect(undocumented).toEqual([]);
  });

  it('builds the image on Node 24 LTS, with /app/.env linked into the data directory', () => {
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:24-bookworm-slim$/m);
    expect(dockerfile).toContain('ln -s .data/.env /app/.env');
    expect(dockerfile).toMatch(/^USER node$/m);
  });
});

describe('deploy/compose/init-secrets.sh (the service `secrets`)', () => {
  let dir: string;
  let appData: string;
  let postgresSecret: string;
  const run = (env: Env = {}) =>
    execFileSync('sh', [join(ROOT, 'deploy/compose/init-secrets.sh'), appData, postgresSecret], {
      env: { PATH: process.env.PATH, OWNER: `${process.getuid!()}:${process.getgid!()}`, ...env },
      encoding: 'utf8',
      stdio: 'pipe',
    });
  const read = (file: string) => readFile(file, 'utf8');
  /** What the gateway sees: the generated .env loaded the way src/startup/env-file.ts loads it. */
  const gatewayEnv = (): Env => {
    const output = execFileSync(
      process.execPath,
      [
        '-e',
        `process.loadEnvFile(${JSON.stringify(join(appData, '.env'))}); process.stdout.write(JSON.stringify({ PGPASSWORD: process.env.PGPASSWORD, METRICS_TOKEN: process.env.METRICS_TOKEN }))`,
      ],
      {
        env: { PATH: process.env.PATH },
        encoding: 'utf8',
      },
    );
    return JSON.parse(output) as Env;
  };

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'init-secrets-'));
    appData = join(dir, 'app-data');
    postgresSecret = join(dir, 'postgres-secret');
    execFileSync('mkdir', [appData, postgresSecret]);
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('generates the database password and the metrics token once (mode 0600) and hands both to the gateway', async () => {
    run();
    const password = await read(join(postgresSecret, 'postgres-password'));
    const token = await read(join(appData, 'metrics-token'));
    expect(password).toMatch(/^[A-Za-z0-9]{43}$/);
    expect(token).toMatch(/^[A-Za-z0-9]{43}$/);
    expect(password).not.toBe(token);
    for (const file of [join(postgresSecret, 'postgres-password'), join(appData, 'metrics-token'), join(appData, '.env')]) {
      expect((await stat(file)).mode & 0o777).toBe(0o600);
    }
    expect(gatewayEnv()).toEqual({ PGPASSWORD: password, METRICS_TOKEN: token });
    // A valid METRICS_TOKEN for the gateway.
    expect(loadConfig({ METRICS_TOKEN: token }).METRICS_TOKEN).toBe(token);

    run();
    expect(await read(join(postgresSecret, 'postgres-password'))).toBe(password);
    expect(await read(join(appData, 'metrics-token'))).toBe(token);
  });

  it('takes POSTGRES_PASSWORD and METRICS_TOKEN from the environment, any characters but a quote or a line break', async () => {
    const password = 'p#a"s s\\$x `y` ${z}';
    run({ POSTGRES_PASSWORD: password, METRICS_TOKEN: 'a-metrics-token-from-dot-env' });
    expect(await read(join(postgresSecret, 'postgres-password'))).toBe(password);
    expect(gatewayEnv()).toEqual({ PGPASSWORD: password, METRICS_TOKEN: 'a-metrics-token-from-dot-env' });
    expect(() => run({ POSTGRES_PASSWORD: "it's" })).toThrow(/must not contain a single quote or a line break/);
  });
});
