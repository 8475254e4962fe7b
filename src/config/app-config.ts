import { applyDecorators } from '@nestjs/common';
import { createPrivateKey } from 'node:crypto';
import { plainToInstance, Transform } from 'class-transformer';
import {
  getMetadataStorage,
  IsBoolean,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  Matches,
  Max,
  Min,
  MinLength,
  Validate,
  validateSync,
  ValidationArguments,
  ValidationError,
  ValidatorConstraint,
  ValidatorConstraintInterface,
} from 'class-validator';
import { TrustedProxies } from '../common/trusted-proxies.js';
import { longestSeconds, parseIsoDuration, shortestSeconds } from './iso-duration.js';

const DELAY = String.raw`\d{1,6}[smhd]`;
const RETRY_SCHEDULE_PATTERN = new RegExp(`^${DELAY}(,${DELAY}){0,19}$`);
const DELAY_UNIT_SECONDS = { s: 1, m: 60, h: 3600, d: 86400 } as const;

/** `5s,5m,2h` as seconds: [5, 300, 7200]. The format is checked by the configuration first. */
export function parseRetrySchedule(schedule: string): number[] {
  return schedule.split(',').map((delay) => Number(delay.slice(0, -1)) * DELAY_UNIT_SECONDS[delay.at(-1) as keyof typeof DELAY_UNIT_SECONDS]);
}

const LEASE_RULE = 'greater than OUTBOUND_WEBHOOKS_TIMEOUT_SECONDS';

/** A lease shorter than an attempt could let a second instance start the same delivery while the first is still sending. */
@ValidatorConstraint({ name: 'greaterThanTimeout' })
class GreaterThanTimeout implements ValidatorConstraintInterface {
  validate(value: unknown, args: ValidationArguments): boolean {
    const timeout = (args.object as AppConfig).OUTBOUND_WEBHOOKS_TIMEOUT_SECONDS;
    return typeof value !== 'number' || typeof timeout !== 'number' || value > timeout;
  }
}

/** TRUSTED_PROXIES must be addresses, CIDR ranges or the names loopback, private, linklocal. */
@ValidatorConstraint({ name: 'trustedProxies' })
class TrustedProxyList implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return typeof value === 'string' && TrustedProxies.invalidEntries(value).length === 0;
  }
}

const RETENTION_MAXIMUM = 'P100Y';

/**
 * An ISO 8601 duration of whole numbers (iso-duration.ts) from `minimum` to `maximum`; the message states
 * both, and why the minimum is what it is (`because`).
 */
function DurationInRange(minimum: string, maximum: string, because?: string): PropertyDecorator {
  const floor = shortestSeconds(parseIsoDuration(minimum)!);
  const ceiling = longestSeconds(parseIsoDuration(maximum)!);
  const message = `must be an ISO 8601 duration such as P90D or PT12H (whole numbers), from ${minimum} to ${maximum}${because ? ` (${because})` : ''}`;
  @ValidatorConstraint({ name: `duration${minimum}to${maximum}` })
  class Period implements ValidatorConstraintInterface {
    validate(value: unknown): boolean {
      const duration = typeof value === 'string' ? parseIsoDuration(value) : null;
      return duration !== null && shortestSeconds(duration) >= floor && longestSeconds(duration) <= ceiling;
    }
  }
  return Validate(Period, { message });
}

/** A retention period: from `minimum` up to a hundred years. */
const RetentionPeriod = (minimum: string, because?: string) => DurationInRange(minimum, RETENTION_MAXIMUM, because);

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Values that must never be echoed back, not even in a start-up error. */
const SECRET_VARIABLES = new Set([
  'DATABASE_URL',
  'REDIS_URL',
  'OIDC_CLIENT_SECRET',
  'PGPASSWORD',
  'ADMIN_TOKEN',
  'BANK_WEBHOOK_SECRET',
  'BANK_WEBHOOK_SECRET_PREVIOUS',
  'METRICS_TOKEN',
  'ARCHIVE_SIGNING_KEY',
]);

const toInt = ({ value }: { value: unknown }) => (typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value.trim()) : value);

/**
 * An integer variable within [min, max]; the message states the range, as the README does, and any
 * further rule the variable has to meet (`also`), so that every refusal of it reads the same.
 */
function IntInRange(min: number, max: number, also?: string): PropertyDecorator {
  const message = `must be an integer from ${min} to ${max}${also ? `, ${also}` : ''}`;
  return applyDecorators(Transform(toInt), IsInt({ message }), Min(min, { message }), Max(max, { message }));
}

const toBool = ({ value }: { value: unknown }) => {
  if (typeof value !== 'string') return value;
  const v = value.trim().toLowerCase();
  if (['true', '1', 'yes'].includes(v)) return true;
  if (['false', '0', 'no'].includes(v)) return false;
  return value;
};

/**
 * The environment (README, "Configuration"), validated once at start. Property names are the variable names so
 * that every message names exactly what the operator has to change.
 */
export class AppConfig {
  @IntInRange(0, 65535)
  PORT = 3000;

  @IsString()
  @MinLength(1, { message: 'must not be empty' })
  HOST = '0.0.0.0';

  @IsOptional()
  @Matches(/^postgres(ql)?:\/\/\S+$/, { message: 'must be a postgres:// or postgresql:// connection URL' })
  DATABASE_URL?: string;

  /** libpq's variables, used when DATABASE_URL is unset and PGHOST is set (docker-compose.yml does). */
  @IsOptional()
  @IsString()
  PGHOST?: string;

  @IsOptional()
  @IntInRange(1, 65535)
  PGPORT?: number;

  @IsOptional()
  @IsString()
  PGUSER?: string;

  @IsOptional()
  @IsString()
  PGPASSWORD?: string;

  @IsOptional()
  @IsString()
  PGDATABASE?: string;

  @IsString()
  @MinLength(1, { message: 'must not be empty' })
  DATA_DIR = './.data';

  @IsOptional()
  @MinLength(16, { message: 'must be at least 16 characters long' })
  ADMIN_TOKEN?: string;

  @IsOptional()
  @MinLength(16, { message: 'must be at least 16 characters long' })
  BANK_WEBHOOK_SECRET?: string;

  @IsOptional()
  @MinLength(16, { message: 'must be at least 16 characters long' })
  BANK_WEBHOOK_SECRET_PREVIOUS?: string;

  // The archive (docs/archive.md).

  /** How soon after its commit a feed event is sealed into the archive. */
  @DurationInRange('PT1S', 'PT1H')
  ARCHIVE_SEAL_INTERVAL = 'PT1S';

  /** How often, at most, a new checkpoint is signed while entries are added. */
  @DurationInRange('PT1S', 'P1D')
  ARCHIVE_CHECKPOINT_INTERVAL = 'PT10S';

  /** The checkpoints' origin line, also the signing key's name; by default the log's own (archive-signer.ts archiveOrigin). */
  @IsOptional()
  @Matches(/^[^\s+]{1,200}$/u, { message: 'must be 1 to 200 characters without spaces or "+", such as gateway.example.com/archive' })
  ARCHIVE_ORIGIN?: string;

  /** The Ed25519 private key (PKCS#8 PEM) that signs checkpoints; generated into DATA_DIR when unset. */
  @IsOptional()
  @IsString()
  ARCHIVE_SIGNING_KEY?: string;

  @IntInRange(1, 3600)
  WEBHOOK_TOLERANCE_SECONDS = 300;

  @IntInRange(60, 2592000)
  IDEMPOTENCY_TTL_SECONDS = 86400;

  @IntInRange(1, 1000000)
  RATE_LIMIT_PER_MINUTE = 600;

  @IntInRange(1024, 104857600)
  BODY_LIMIT_BYTES = 1048576;

  @IsIn(LOG_LEVELS, { message: `must be one of ${LOG_LEVELS.join(', ')}` })
  LOG_LEVEL: LogLevel = 'info';

  @Transform(toBool)
  @IsBoolean({ message: 'must be true or false' })
  MIGRATIONS_RUN = true;

  // Two at least: migrations at start hold the advisory lock on one connection and run on another.
  @IntInRange(2, 200)
  DB_POOL_SIZE = 10;

  /**
   * How long a pooled connection lives before it is replaced. Its prepared statements keep the plans
   * made with the table sizes of the time; a new connection plans them afresh (see connection-options).
   */
  @IntInRange(1, 86400)
  DB_POOL_CONNECTION_LIFETIME_SECONDS = 60;

  /** A server-side bound on every statement, so a stuck query cannot hold a pool connection for long. */
  @IntInRange(100, 600000)
  DB_STATEMENT_TIMEOUT_MS = 10000;

  /** How long a statement waits for a row or advisory lock another transaction holds before giving up (503). */
  @IntInRange(100, 600000)
  DB_LOCK_TIMEOUT_MS = 2000;

  /** The whole request, body included: a client trickling its body is cut off after this. */
  @IntInRange(1000, 600000)
  HTTP_REQUEST_TIMEOUT_MS = 30000;

  @IntInRange(1000, 600000)
  HTTP_HEADERS_TIMEOUT_MS = 10000;

  @IntInRange(1000, 600000)
  HTTP_KEEP_ALIVE_TIMEOUT_MS = 5000;

  @IntInRange(1, 1000000)
  HTTP_MAX_CONNECTIONS = 1024;

  /**
   * Open connections from one client address (a trusted proxy's own are not counted): one client holding
   * sockets open must not take every connection from the others.
   */
  @IntInRange(1, 1000000)
  HTTP_MAX_CONNECTIONS_PER_CLIENT = 128;

  /**
   * After SIGTERM, how long /health/ready answers 503 while requests are still served, so that a load
   * balancer stops sending before the instance stops accepting.
   */
  @IntInRange(0, 300)
  SHUTDOWN_DELAY_SECONDS = 0;

  /**
   * The address browsers and the SSO provider reach the gateway at (`https://gateway.example.com`), behind
   * a proxy that may not pass the Host header on: the SSO redirect_uri and the console's origin check use
   * it instead of the Host of each request.
   */
  @IsOptional()
  @IsString()
  PUBLIC_URL?: string;

  /** Console sign-in by OpenID Connect when the issuer, client id and client secret are all set. */
  @IsOptional()
  @Matches(/^https?:\/\/\S+$/, { message: 'must be an http:// or https:// URL' })
  OIDC_ISSUER_URL?: string;

  @IsOptional()
  @IsString()
  @MinLength(1, { message: 'must not be empty' })
  OIDC_CLIENT_ID?: string;

  @IsOptional()
  @IsString()
  @MinLength(1, { message: 'must not be empty' })
  OIDC_CLIENT_SECRET?: string;

  /** A console session ends after this long without a request. */
  @IntInRange(1, 86400)
  ADMIN_SESSION_IDLE_SECONDS = 1800;

  /** A console session ends this long after sign-in at the latest. */
  @IntInRange(1, 604800)
  ADMIN_SESSION_MAX_SECONDS = 28800;

  /**
   * The longest a personal token made in a console session may live, from its making: a session lasts
   * hours, and what it makes must not outlive it for good (a token made with a token is bound by that one).
   */
  @DurationInRange('PT1H', 'P10Y')
  ADMIN_TOKEN_MAX_TTL = 'P90D';

  /** A Redis or Valkey through which every instance shares the per-key rate limit; unset: each instance counts on its own. */
  @IsOptional()
  @Matches(/^rediss?:\/\/\S+$/, { message: 'must be a redis:// or rediss:// URL (Valkey takes the same)' })
  REDIS_URL?: string;

  /** Peers whose X-Forwarded-For names the client (comma-separated addresses, CIDR ranges, loopback, private, linklocal); unset: none. */
  @IsOptional()
  @Validate(TrustedProxyList, { message: 'must be comma-separated IP addresses or CIDR ranges, or the names loopback, private, linklocal' })
  TRUSTED_PROXIES?: string;

  @IsOptional()
  @MinLength(16, { message: 'must be at least 16 characters long' })
  METRICS_TOKEN?: string;

  @Transform(toBool)
  @IsBoolean({ message: 'must be true or false' })
  OUTBOUND_WEBHOOKS_ALLOW_PRIVATE = false;

  @IntInRange(1, 60)
  OUTBOUND_WEBHOOKS_TIMEOUT_SECONDS = 15;

  @Matches(RETRY_SCHEDULE_PATTERN, { message: 'must be 1 to 20 comma-separated delays such as 5s,5m,2h,1d' })
  OUTBOUND_WEBHOOKS_RETRY_SCHEDULE = '5s,5m,30m,2h,5h,10h,14h,20h,24h';

  @IntInRange(0, 604800)
  OUTBOUND_WEBHOOKS_SECRET_GRACE_SECONDS = 86400;

  // At most 110 s: a crashed instance's claims are taken over within two minutes (with the poll below).
  @IntInRange(2, 110, LEASE_RULE)
  @Validate(GreaterThanTimeout, { message: `must be an integer from 2 to 110, ${LEASE_RULE}` })
  OUTBOUND_WEBHOOKS_LEASE_SECONDS = 60;

  @IntInRange(1, 10)
  OUTBOUND_WEBHOOKS_POLL_SECONDS = 10;

  @IntInRange(1, 256)
  OUTBOUND_WEBHOOKS_CONCURRENCY = 32;

  @IntInRange(1, 64)
  OUTBOUND_WEBHOOKS_ENDPOINT_CONCURRENCY = 8;

  // Retention (docs/operations.md, "Retention"). The minimums guard against a typo that would purge what is still in use:
  // a client's feed after a week offline and the push retry schedule (about 3 days by default); bank
  // eventIds long after the signature window (at most an hour) and the bank's own retries (days), so
  // a purged eventId can neither be replayed nor be re-sent and applied twice; a month of audit entries.

  /** Feed events, and with them their push deliveries and attempts. */
  @RetentionPeriod('P7D')
  RETENTION_EVENTS = 'P90D';

  /** Finished (succeeded or failed) push deliveries and their attempts, from their last attempt. */
  @RetentionPeriod('P1D')
  RETENTION_DELIVERIES = 'P30D';

  /** Stored bank webhook events, duplicates included, from their arrival. */
  @RetentionPeriod('P7D', "far beyond the signature window and the bank's retries, so that a purged eventId cannot be applied again")
  RETENTION_BANK_EVENTS = 'P90D';

  @RetentionPeriod('P30D')
  RETENTION_AUDIT = 'P400D';

  /** How often each instance looks for rows past their retention; tests shorten it. */
  @IntInRange(1, 3600)
  RETENTION_INTERVAL_SECONDS = 60;
}

export class ConfigValidationError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigValidationError';
  }
}

function describe(error: ValidationError): string {
  const rule = Object.values(error.constraints ?? {})[0] ?? 'is invalid';
  const shown = SECRET_VARIABLES.has(error.property) ? '' : ` (got "${String(error.value)}")`;
  return `${error.property} ${rule}${shown}`;
}

/**
 * Every variable the configuration reads: each property with a rule, those without a default (optional
 * ones such as TRUSTED_PROXIES) included, which `new AppConfig()` does not have as keys.
 */
export function configVariables(): string[] {
  const validated = getMetadataStorage()
    .getTargetValidationMetadatas(AppConfig, '', true, false)
    .map((rule) => rule.propertyName);
  return [...new Set([...Object.keys(new AppConfig()), ...validated])];
}

/**
 * Single sign-on is all three OIDC settings or none, and the issuer speaks HTTPS: plain HTTP only to a
 * provider on this machine (a local trial), since the ID token and the client secret travel over it.
 */
function oidcProblems(config: AppConfig): string[] {
  const set = [config.OIDC_ISSUER_URL, config.OIDC_CLIENT_ID, config.OIDC_CLIENT_SECRET].filter((value) => value !== undefined).length;
  if (set !== 0 && set !== 3) return ['OIDC_ISSUER_URL, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET must be set together (or none of them)'];
  if (config.OIDC_ISSUER_URL && !isHttpsOrLoopback(config.OIDC_ISSUER_URL))
    return ['OIDC_ISSUER_URL must be an https:// URL (http:// only for a provider on a loopback address)'];
  return [];
}

/** A scheme, a host and maybe a port, nothing more; HTTPS unless on this machine. */
function isOrigin(value: string): boolean {
  try {
    return isHttpsOrLoopback(value) && new URL(value).origin === value;
  } catch {
    return false;
  }
}

function isHttpsOrLoopback(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || (url.protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname));
  } catch {
    return false;
  }
}

function isEd25519PrivateKey(pem: string): boolean {
  try {
    return createPrivateKey(pem).asymmetricKeyType === 'ed25519';
  } catch {
    return false;
  }
}

/** Reads the known variables from `env`; an empty string counts as unset. Throws ConfigValidationError. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const names = new Set(configVariables());
  const raw: Record<string, string> = {};
  for (const name of names) {
    const value = env[name];
    if (value !== undefined && value !== '') raw[name] = value;
  }
  const config = plainToInstance(AppConfig, raw);
  const problems = validateSync(config, { forbidUnknownValues: false }).map(describe);
  if (problems.length === 0 && config.HTTP_HEADERS_TIMEOUT_MS > config.HTTP_REQUEST_TIMEOUT_MS) {
    // Node refuses to start a server with this combination.
    problems.push('HTTP_HEADERS_TIMEOUT_MS must not exceed HTTP_REQUEST_TIMEOUT_MS');
  }
  problems.push(...oidcProblems(config));
  if (config.PUBLIC_URL !== undefined && !isOrigin(config.PUBLIC_URL)) {
    problems.push('PUBLIC_URL must be an origin such as https://gateway.example.com (no path; http:// only for a loopback address)');
  }
  if (config.ARCHIVE_SIGNING_KEY !== undefined && !isEd25519PrivateKey(config.ARCHIVE_SIGNING_KEY)) {
    problems.push('ARCHIVE_SIGNING_KEY must be an Ed25519 private key in PKCS#8 PEM (-----BEGIN PRIVATE KEY-----)');
  }
  if (problems.length > 0) throw new ConfigValidationError(problems);
  return config;
}
