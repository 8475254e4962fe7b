import { ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AppError } from '../common/app-error';
import { STORED_ANSWER } from '../idempotency/idempotency.interceptor';
import { ApiKeyGuard } from './api-key.guard';
import { ApiKeysService, Authentication } from './api-keys.service';
import { AuthenticatedKey } from './authenticated-key';
import { KeyRateLimiter } from './key-rate-limiter';
import { KeyUsageRecorder } from './key-usage.recorder';
import { ReadsWithKey } from './read-with-key';

const KEY: AuthenticatedKey = { keyId: 'k1', source: 'acme-erp', prefix: 'sk_tax_abcde', expiresAt: null };

class Routes {
  plain(): void {}

  @ReadsWithKey(STORED_ANSWER)
  idempotent(): void {}
}

function contextFor(request: object, handler: keyof Routes = 'plain'): ExecutionContext {
  return { switchToHttp: () => ({ getRequest: () => request }), getHandler: () => Routes.prototype[handler] } as unknown as ExecutionContext;
}

describe('ApiKeyGuard', () => {
  const authenticate = jest.fn<Promise<Authentication | null>, [unknown, unknown]>();
  const record = jest.fn();
  const consume = jest.fn();
  const guard = new ApiKeyGuard(
    { authenticate } as unknown as ApiKeysService,
    { record } as unknown as KeyUsageRecorder,
    { consume } as unknown as KeyRateLimiter,
    new Reflector(),
  );

  beforeEach(() => {
    authenticate.mockReset();
    record.mockReset();
    consume.mockReset();
  });

  it('lets routes outside /api/v1 through without a lookup', async () => {
    await expect(guard.canActivate(contextFor({ routeOptions: { url: '/health/ready' }, headers: {} }))).resolves.toBe(true);
    await expect(guard.canActivate(contextFor({ routeOptions: { url: '/api/v1x' }, headers: {} }))).resolves.toBe(true);
    expect(authenticate).not.toHaveBeenCalled();
  });

  it('refuses an /api/v1 request whose key does not authenticate with UNAUTHORIZED', async () => {
    authenticate.mockResolvedValue(null);
    const request = { routeOptions: { url: '/api/v1/me' }, headers: { 'x-api-key': 'sk_tax_unknown' } };
    const error = await guard.canActivate(contextFor(request)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe('UNAUTHORIZED');
    expect(authenticate).toHaveBeenCalledWith('sk_tax_unknown', undefined);
    expect(record).not.toHaveBeenCalled();
    expect(consume).not.toHaveBeenCalled();
    expect(request).not.toHaveProperty('apiKey');
  });

  it('attaches the key to the request and records its use', async () => {
    authenticate.mockResolvedValue({ key: KEY, row: { 'key:id': 'k1' } });
    const request: { apiKey?: AuthenticatedKey } = Object.assign({ routeOptions: { url: '/api/v1/documents/:id' }, headers: { 'x-api-key': 'k' } });
    await expect(guard.canActivate(contextFor(request))).resolves.toBe(true);
    expect(request.apiKey).toEqual(KEY);
    expect(record).toHaveBeenCalledWith('k1');
    expect(consume).toHaveBeenCalledWith('k1');
    expect(request).not.toHaveProperty('storedAnswer');
  });

  it("makes the route's read with the key look-up: an @Idempotent route's stored answer", async () => {
    const storedAnswer = { fingerprint: 'f', status: 201, body: '{}', location: null };
    authenticate.mockResolvedValue({ key: KEY, row: { 'key:id': 'k1', ...storedAnswer } });
    const headers = { 'x-api-key': 'k', 'x-idempotency-key': 'order-0001' };
    const request = { method: 'POST', routeOptions: { url: '/api/v1/documents' }, headers };
    await expect(guard.canActivate(contextFor(request, 'idempotent'))).resolves.toBe(true);
    expect(authenticate).toHaveBeenCalledWith('k', { with: STORED_ANSWER, parameter: 'order-0001' });
    expect(request).toHaveProperty('storedAnswer', storedAnswer);
  });

  it('keeps null when the read found nothing', async () => {
    authenticate.mockResolvedValue({ key: KEY, row: { 'key:id': 'k1', fingerprint: null, status: null, body: null, location: null } });
    const request = { method: 'POST', routeOptions: { url: '/api/v1/documents' }, headers: { 'x-api-key': 'k', 'x-idempotency-key': 'order-0001' } };
    await expect(guard.canActivate(contextFor(request, 'idempotent'))).resolves.toBe(true);
    expect(request).toHaveProperty('storedAnswer', null);
  });

  it('leaves a malformed idempotency key to its own 422 and does not look it up', async () => {
    authenticate.mockResolvedValue({ key: KEY, row: { 'key:id': 'k1' } });
    const request = { method: 'POST', routeOptions: { url: '/api/v1/documents' }, headers: { 'x-api-key': 'k', 'x-idempotency-key': 'bad key!' } };
    await expect(guard.canActivate(contextFor(request, 'idempotent'))).resolves.toBe(true);
    expect(authenticate).toHaveBeenCalledWith('k', undefined);
    expect(request).not.toHaveProperty('storedAnswer');
  });

  it('lets the rate limiter refuse an authenticated key', async () => {
    authenticate.mockResolvedValue({ key: KEY, row: { 'key:id': 'k1' } });
    consume.mockImplementation(() => {
      throw new AppError('RATE_LIMITED', 'slow down');
    });
    const error = await guard.canActivate(contextFor({ routeOptions: { url: '/api/v1/me' }, headers: { 'x-api-key': 'k' } })).catch((e: unknown) => e);
    expect((error as AppError).code).toBe('RATE_LIMITED');
  });
});
