import { jest } from '@jest/globals';
import { ExecutionContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { AppError } from '../common/app-error.js';
import { AppConfig } from '../config/app-config.js';
import { PoolStatistics } from '../database/pool-statistics.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { ApiKeyGuard } from './api-key.guard.js';
import { ApiKeysService } from './api-keys.service.js';
import { AuthenticatedKey } from './authenticated-key.js';
import { KeyRateLimiter } from './key-rate-limiter.js';
import { RateLimitGuard } from './rate-limit.guard.js';

const KEY: AuthenticatedKey = { id: 'k1', source: 'acme-erp', prefix: 'sk_tax_abcde', expiresAt: null };

const contextFor = (request: object) => ({ switchToHttp: () => ({ getRequest: () => request }) }) as unknown as ExecutionContext;

describe('ApiKeyGuard', () => {
  const authenticate = jest.fn<(request: unknown) => Promise<AuthenticatedKey | null>>();
  let guard: ApiKeyGuard;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({ providers: [ApiKeyGuard, { provide: ApiKeysService, useValue: { authenticate } }] }).compile();
    guard = moduleRef.get(ApiKeyGuard);
  });
  beforeEach(() => authenticate.mockReset());

  it('lets routes outside /api/v1 through without a look-up', async () => {
    await expect(guard.canActivate(contextFor({ routeOptions: { url: '/health/ready' }, headers: {} }))).resolves.toBe(true);
    await expect(guard.canActivate(contextFor({ routeOptions: { url: '/api/v1x' }, headers: {} }))).resolves.toBe(true);
    expect(authenticate).not.toHaveBeenCalled();
  });

  it('refuses an /api/v1 request whose key does not authenticate with UNAUTHORIZED, attaching nothing', async () => {
    authenticate.mockResolvedValue(null);
    const request = { routeOptions: { url: '/api/v1/me' }, headers: { 'x-api-key': 'sk_tax_unknown' } };
    const error = await guard.canActivate(contextFor(request)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe('UNAUTHORIZED');
    expect(authenticate).toHaveBeenCalledWith('sk_tax_unknown');
    expect(request).not.toHaveProperty('apiKey');
  });

  it('attaches the authenticated key to the request', async () => {
    authenticate.mockResolvedValue(KEY);
    const request: { apiKey?: AuthenticatedKey; routeOptions: object; headers: object } = {
      routeOptions: { url: '/api/v1/documents/:id' },
      headers: { 'x-api-key': 'k' },
    };
    await expect(guard.canActivate(contextFor(request))).resolves.toBe(true);
    expect(request.apiKey).toEqual(KEY);
  });
});

describe('RateLimitGuard', () => {
  const config = Object.assign(new AppConfig(), { RATE_LIMIT_PER_MINUTE: 2 });
  const reply = () => {
    const headers: Record<string, string> = {};
    return { headers, reply: { headers: (h: Record<string, string>) => Object.assign(headers, h) } };
  };
  const contextWith = (request: object, response: object) =>
    ({ switchToHttp: () => ({ getRequest: () => request, getResponse: () => response }) }) as unknown as ExecutionContext;

  it('counts only authenticated requests, tells each its budget, and refuses past the limit with RATE_LIMITED and Retry-After', async () => {
    const moduleRef = await Test.createTestingModule({
      providers: [
        RateLimitGuard,
        KeyRateLimiter,
        MetricsService,
        { provide: AppConfig, useValue: config },
        { provide: PoolStatistics, useValue: new PoolStatistics(0) },
      ],
    }).compile();
    const guard = moduleRef.get(RateLimitGuard);
    try {
      await expect(guard.canActivate(contextWith({ headers: {} }, reply().reply))).resolves.toBe(true);
      const first = reply();
      await expect(guard.canActivate(contextWith({ apiKey: KEY }, first.reply))).resolves.toBe(true);
      expect(first.headers).toEqual({ 'RateLimit-Policy': '"per-key";q=2;w=60', RateLimit: '"per-key";r=1;t=30' });
      await expect(guard.canActivate(contextWith({ apiKey: KEY }, reply().reply))).resolves.toBe(true);
      const error = await guard.canActivate(contextWith({ apiKey: KEY }, reply().reply)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AppError);
      expect((error as AppError).code).toBe('RATE_LIMITED');
      expect((error as AppError).headers).toMatchObject({ 'Retry-After': '30', RateLimit: '"per-key";r=0;t=60' });
      // Another key has its own budget.
      await expect(guard.canActivate(contextWith({ apiKey: { ...KEY, id: 'k2' } }, reply().reply))).resolves.toBe(true);
    } finally {
      await moduleRef.close();
    }
  });
});
