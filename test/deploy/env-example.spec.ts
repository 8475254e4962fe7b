import { getMetadataStorage } from 'class-validator';
import { AppConfig, loadConfig } from '../../src/config/app-config';
import { readEnvExample, statedDefault } from './env-example';

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

/** Every variable the configuration class declares (each has at least one validation rule), read now. */
const configured = [...new Set(getMetadataStorage().getTargetValidationMetadatas(AppConfig, '', false, false).map((m) => m.propertyName))];
const defaults = new AppConfig() as unknown as Record<string, unknown>;
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

  it('lists nothing the gateway does not read, but compose-only and announced variables, the latter commented out', () => {
    const unknown = entries.filter((e) => !configured.includes(e.name) && !COMPOSE_ONLY.has(e.name) && !ANNOUNCED.has(e.name));
    expect(unknown.map((e) => `line ${e.line}: ${e.name}`)).toEqual([]);
    const setButNotRead = entries.filter((e) => ANNOUNCED.has(e.name) && !configured.includes(e.name) && !e.commented);
    expect(setButNotRead.map((e) => e.name)).toEqual([]);
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
    const unsetSaysOtherwise = forGateway.filter((e) => defaultOf(e.name) === undefined && statedDefault(e) !== undefined && !/unset|user name/.test(statedDefault(e)!));
    expect(unsetSaysOtherwise.map((e) => e.name)).toEqual([]);
  });

  it('gives only values the gateway accepts', () => {
    // Settings that only go together are checked with their companions set.
    const together = [['OIDC_ISSUER_URL', 'OIDC_CLIENT_ID', 'OIDC_CLIENT_SECRET']];
    const companions = (name: string) => Object.fromEntries((together.find((group) => group.includes(name)) ?? []).map((other) => [other, 'a-companion-value']));
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
