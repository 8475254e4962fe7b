import { ExecutionContext } from '@nestjs/common';
import { AppError } from '../common/app-error';
import { AppConfig } from '../config/app-config';
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

  it('counts only authenticated requests, and refuses past the limit with RATE_LIMITED and Retry-After', () => {
    const guard = new RateLimitGuard(new KeyRateLimiter(config), config);
    expect(guard.canActivate(contextFor({ headers: {} }))).toBe(true);
    const request = { apiKey: KEY };
    expect(guard.canActivate(contextFor(request))).toBe(true);
    expect(guard.canActivate(contextFor(request))).toBe(true);
    const error = (() => {
      try {
        return guard.canActivate(contextFor(request));
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe('RATE_LIMITED');
    expect(Number((error as AppError).headers['Retry-After'])).toBeGreaterThanOrEqual(1);
    // Another key has its own budget.
    expect(guard.canActivate(contextFor({ apiKey: { ...KEY, keyId: 'k2' } }))).toBe(true);
  });
});
