import { ConfigValidationError, loadConfig, parseRetrySchedule } from './app-config.js';

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigValidationError) return error.problems;
    throw error;
  }
  return [];
}

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig({});
    for (const optional of ['DATABASE_URL', 'ADMIN_TOKEN', 'BANK_WEBHOOK_SECRET', 'BANK_WEBHOOK_SECRET_PREVIOUS'] as const) {
      expect(config[optional]).toBeUndefined();
    }
    expect(config).toMatchObject({
      PORT: 3000,
      HOST: '0.0.0.0',
      DATA_DIR: './.data',
      WEBHOOK_TOLERANCE_SECONDS: 300,
      IDEMPOTENCY_TTL_SECONDS: 86400,
      RATE_LIMIT_PER_MINUTE: 600,
      BODY_LIMIT_BYTES: 1048576,
      LOG_LEVEL: 'info',
      MIGRATIONS_RUN: true,
      DB_POOL_SIZE: 10,
      DB_POOL_CONNECTION_LIFETIME_SECONDS: 60,
      DB_STATEMENT_TIMEOUT_MS: 10000,
      DB_LOCK_TIMEOUT_MS: 2000,
      HTTP_REQUEST_TIMEOUT_MS: 30000,
      HTTP_HEADERS_TIMEOUT_MS: 10000,
      HTTP_KEEP_ALIVE_TIMEOUT_MS: 5000,
      HTTP_MAX_CONNECTIONS: 1024,
    });
    expect(config.METRICS_TOKEN).toBeUndefined();
  });

  it('parses numbers and booleans from strings and treats empty strings as unset', () => {
    const config = loadConfig({ PORT: '8080', MIGRATIONS_RUN: 'false', DATABASE_URL: '', IDEMPOTENCY_TTL_SECONDS: '3600' });
    expect(config.PORT).toBe(8080);
    expect(config.MIGRATIONS_RUN).toBe(false);
    expect(config.DATABASE_URL).toBeUndefined();
    expect(config.IDEMPOTENCY_TTL_SECONDS).toBe(3600);
  });

  it.each([
    [{ PORT: '70000' }, 'PORT must be an integer from 0 to 65535 (got "70000")'],
    [{ PORT: '3.5' }, 'PORT must be an integer from 0 to 65535 (got "3.5")'],
    [{ BODY_LIMIT_BYTES: '10' }, 'BODY_LIMIT_BYTES must be an integer from 1024 to 104857600 (got "10")'],
    [{ IDEMPOTENCY_TTL_SECONDS: 'day' }, 'IDEMPOTENCY_TTL_SECONDS must be an integer from 60 to 2592000 (got "day")'],
    [{ RATE_LIMIT_PER_MINUTE: '0' }, 'RATE_LIMIT_PER_MINUTE must be an integer from 1 to 1000000 (got "0")'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent (got "loud")'],
    [{ MIGRATIONS_RUN: 'sometimes' }, 'MIGRATIONS_RUN must be true or false (got "sometimes")'],
    [{ DB_POOL_SIZE: '1' }, 'DB_POOL_SIZE must be an integer from 2 to 200 (got "1")'],
    [{ DB_STATEMENT_TIMEOUT_MS: '0' }, 'DB_STATEMENT_TIMEOUT_MS must be an integer from 100 to 600000 (got "0")'],
    [{ DB_LOCK_TIMEOUT_MS: 'never' }, 'DB_LOCK_TIMEOUT_MS must be an integer from 100 to 600000 (got "never")'],
    [{ HTTP_REQUEST_TIMEOUT_MS: '0' }, 'HTTP_REQUEST_TIMEOUT_MS must be an integer from 1000 to 600000 (got "0")'],
    [{ HTTP_MAX_CONNECTIONS: '0' }, 'HTTP_MAX_CONNECTIONS must be an integer from 1 to 1000000 (got "0")'],
    [{ HTTP_REQUEST_TIMEOUT_MS: '5000', HTTP_HEADERS_TIMEOUT_MS: '6000' }, 'HTTP_HEADERS_TIMEOUT_MS must not exceed HTTP_REQUEST_TIMEOUT_MS'],
    [
      { OUTBOUND_WEBHOOKS_RETRY_SCHEDULE: '5s,,1h' },
      'OUTBOUND_WEBHOOKS_RETRY_SCHEDULE must be 1 to 20 comma-separated delays such as 5s,5m,2h,1d (got "5s,,1h")',
    ],
    [{ PGPORT: '0' }, 'PGPORT must be an integer from 1 to 65535 (got "0")'],
    [
      { OUTBOUND_WEBHOOKS_LEASE_SECONDS: '111' },
      'OUTBOUND_WEBHOOKS_LEASE_SECONDS must be an integer from 2 to 110, greater than OUTBOUND_WEBHOOKS_TIMEOUT_SECONDS (got "111")',
    ],
    [{ OUTBOUND_WEBHOOKS_ALLOW_PRIVATE: 'maybe' }, 'OUTBOUND_WEBHOOKS_ALLOW_PRIVATE must be true or false (got "maybe")'],
    ...['https://gateway.example.com/', 'https://gateway.example.com/console', 'http://gateway.example.com', 'gateway.example.com'].map(
      (url): [Record<string, string>, string] => [
        { PUBLIC_URL: url },
        'PUBLIC_URL must be an origin such as https://gateway.example.com (no path; http:// only for a loopback address)',
      ],
    ),
    [
      { OUTBOUND_WEBHOOKS_TIMEOUT_SECONDS: '30', OUTBOUND_WEBHOOKS_LEASE_SECONDS: '30' },
      'OUTBOUND_WEBHOOKS_LEASE_SECONDS must be an integer from 2 to 110, greater than OUTBOUND_WEBHOOKS_TIMEOUT_SECONDS (got "30")',
    ],
  ])('rejects %p with a message naming the variable and the rule', (env, message) => {
    expect(problemsOf(env)).toEqual([message]);
  });

  it('reads the push notification settings, the retry schedule as seconds', () => {
    const config = loadConfig({ OUTBOUND_WEBHOOKS_RETRY_SCHEDULE: '5s,2m,1h,1d', OUTBOUND_WEBHOOKS_ALLOW_PRIVATE: 'true' });
    expect(parseRetrySchedule(config.OUTBOUND_WEBHOOKS_RETRY_SCHEDULE)).toEqual([5, 120, 3600, 86400]);
    expect(parseRetrySchedule(loadConfig({}).OUTBOUND_WEBHOOKS_RETRY_SCHEDULE)).toEqual([5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400]);
    expect(config).toMatchObject({ OUTBOUND_WEBHOOKS_ALLOW_PRIVATE: true, OUTBOUND_WEBHOOKS_TIMEOUT_SECONDS: 15, OUTBOUND_WEBHOOKS_LEASE_SECONDS: 60 });
  });

  it("reads the retention periods as ISO 8601 durations, with the README's defaults", () => {
    expect(loadConfig({})).toMatchObject({
      RETENTION_EVENTS: 'P90D',
      RETENTION_DELIVERIES: 'P30D',
      RETENTION_BANK_EVENTS: 'P90D',
      RETENTION_AUDIT: 'P400D',
      RETENTION_INTERVAL_SECONDS: 60,
    });
    const config = loadConfig({
      RETENTION_EVENTS: 'P1Y',
      RETENTION_DELIVERIES: 'PT24H',
      RETENTION_BANK_EVENTS: 'P1W',
      RETENTION_AUDIT: 'P13M',
      RETENTION_INTERVAL_SECONDS: '1',
    });
    expect(config).toMatchObject({
      RETENTION_EVENTS: 'P1Y',
      RETENTION_DELIVERIES: 'PT24H',
      RETENTION_BANK_EVENTS: 'P1W',
      RETENTION_AUDIT: 'P13M',
      RETENTION_INTERVAL_SECONDS: 1,
    });
  });

  const period = (name: string, value: string, range: string, because = '') =>
    `${name} must be an ISO 8601 duration such as P90D or PT12H (whole numbers), from ${range}${because} (got "${value}")`;
  const BANK_BECAUSE = " (far beyond the signature window and the bank's retries, so that a purged eventId cannot be applied again)";

  it.each([
    [{ RETENTION_EVENTS: '90d' }, period('RETENTION_EVENTS', '90d', 'P7D to P100Y')],
    [{ RETENTION_EVENTS: 'P6D' }, period('RETENTION_EVENTS', 'P6D', 'P7D to P100Y')],
    [{ RETENTION_EVENTS: 'P1.5W' }, period('RETENTION_EVENTS', 'P1.5W', 'P7D to P100Y')],
    [{ RETENTION_EVENTS: 'P101Y' }, period('RETENTION_EVENTS', 'P101Y', 'P7D to P100Y')],
    [{ RETENTION_DELIVERIES: 'PT23H59M59S' }, period('RETENTION_DELIVERIES', 'PT23H59M59S', 'P1D to P100Y')],
    [{ RETENTION_DELIVERIES: '30 days' }, period('RETENTION_DELIVERIES', '30 days', 'P1D to P100Y')],
    // The tolerance is at most an hour: a bank event kept for less than a week could come back as new.
    [{ RETENTION_BANK_EVENTS: 'PT1H' }, period('RETENTION_BANK_EVENTS', 'PT1H', 'P7D to P100Y', BANK_BECAUSE)],
    [{ RETENTION_BANK_EVENTS: 'PT300S' }, period('RETENTION_BANK_EVENTS', 'PT300S', 'P7D to P100Y', BANK_BECAUSE)],
    // A month counts as its shortest (28 days) against a minimum.
    [{ RETENTION_AUDIT: 'P29D' }, period('RETENTION_AUDIT', 'P29D', 'P30D to P100Y')],
    [{ RETENTION_AUDIT: 'P1M' }, period('RETENTION_AUDIT', 'P1M', 'P30D to P100Y')],
    [{ RETENTION_INTERVAL_SECONDS: '0' }, 'RETENTION_INTERVAL_SECONDS must be an integer from 1 to 3600 (got "0")'],
  ])('refuses the retention setting %p and says what it takes', (env, message) => {
    expect(problemsOf(env)).toEqual([message]);
  });

  it('reports every bad variable at once', () => {
    expect(problemsOf({ PORT: 'x', LOG_LEVEL: 'y', WEBHOOK_TOLERANCE_SECONDS: '-1' })).toHaveLength(3);
  });

  it.each(['ADMIN_TOKEN', 'BANK_WEBHOOK_SECRET', 'BANK_WEBHOOK_SECRET_PREVIOUS', 'METRICS_TOKEN'])('never echoes the value of %s', (name) => {
    const problems = problemsOf({ [name]: 'tooshort' });
    expect(problems).toEqual([`${name} must be at least 16 characters long`]);
  });

  it('never echoes a DATABASE_URL, which may hold a password', () => {
    expect(problemsOf({ DATABASE_URL: 'mysql://root:hunter2@db/x' })).toEqual(['DATABASE_URL must be a postgres:// or postgresql:// connection URL']);
  });

  describe('single sign-on', () => {
    const oidc = { OIDC_ISSUER_URL: 'https://login.example.com/realms/ops', OIDC_CLIENT_ID: 'gateway', OIDC_CLIENT_SECRET: 'a-secret-value' };

    it('takes all three settings, or none', () => {
      expect(problemsOf(oidc)).toEqual([]);
      expect(problemsOf({})).toEqual([]);
      expect(problemsOf({ OIDC_ISSUER_URL: oidc.OIDC_ISSUER_URL, OIDC_CLIENT_ID: 'gateway' })).toEqual([
        'OIDC_ISSUER_URL, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET must be set together (or none of them)',
      ]);
    });

    it('speaks HTTPS to the provider, plain HTTP only on a loopback address', () => {
      expect(problemsOf({ ...oidc, OIDC_ISSUER_URL: 'http://localhost:8080' })).toEqual([]);
      expect(problemsOf({ ...oidc, OIDC_ISSUER_URL: 'http://127.0.0.1:8080/realm' })).toEqual([]);
      expect(problemsOf({ ...oidc, OIDC_ISSUER_URL: 'http://login.example.com' })).toEqual([
        'OIDC_ISSUER_URL must be an https:// URL (http:// only for a provider on a loopback address)',
      ]);
    });

    it('never echoes the client secret', () => {
      const problems = problemsOf({ OIDC_CLIENT_SECRET: 'a-secret-value' });
      expect(problems).toHaveLength(1);
      expect(problems.join(' ')).not.toContain('a-secret-value');
    });
  });
});
