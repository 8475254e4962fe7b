import { ExecutionContext } from '@nestjs/common';
import { AppError } from '../common/app-error';
import { AppConfig } from '../config/app-config';
import { Database } from '../database/database';
import { MetricsService } from '../metrics/metrics.service';
import { ApiKeyGuard } from './api-key.guard';
import { ApiKeysService } from './api-keys.service';
import { AuthenticatedKey } from './authenticated-key';
import { KeyRateLimiter } from './key-rate-limiter';
import { RateLimitGuard } from './rate-limit.guard';

const KEY: AuthenticatedKey = { keyId: 'k1', source: 'acme-erp', prefix: 'sk_tax_abcde', expiresAt: null };

const contextFor = (request: object) => ({ switchToHttp: () => ({ getRequest: () => request }) }) as unknown as ExecutionContext;

describe('ApiKeyGuard', () => {
  const authenticate = jest.fn<Promise<AuthenticatedKey | null>, [unknown]>();
  const guard = new ApiKeyGuard({ authenticate } as unknown as ApiKeysService);

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
    const request: { apiKey?: AuthenticatedKey; routeOptions: object; headers: object } = { routeOptions: { url: '/api/v1/documents/:id' }, headers: { 'x-api-key': 'k' } };
    await expect(guard.canActivate(contextFor(request))).resolves.toBe(true);
    expect(request.apiKey).toEqual(KEY);
  });
});

describe('RateLimitGuard', () => {
  const config = Object.assign(new AppConfig(), { RATE_LIMIT_PER_MINUTE: 2 });
  const metrics = new MetricsService({ statistics: () => ({ total: 0, idle: 0, waiting: 0, max: 0 }) } as unknown as Database);
  const reply = () => {
    const headers: Record<string, string> = {};
    return { headers, reply: { headers: (h: Record<string, string>) => Object.assign(headers, h) } };
  };
  const contextWith = (request: object, response: object) =>
    ({ switchToHttp: () => ({ getRequest: () => request, getResponse: () => response }) }) as unknown as ExecutionContext;

  it('counts only authenticated requests, tells each its budget, and refuses past the limit with RATE_LIMITED and Retry-After', async () => {
    const limiter = new KeyRateLimiter(config, metrics);
    const guard = new RateLimitGuard(limiter);
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
      await expect(guard.canActivate(contextWith({ apiKey: { ...KEY, keyId: 'k2' } }, reply().reply))).resolves.toBe(true);
    } finally {
      limiter.onApplicationShutdown();
    }
  });
});
