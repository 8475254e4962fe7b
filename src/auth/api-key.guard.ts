import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { AppError } from '../common/app-error.js';
import { annotateRequest, ATTR_SOURCE } from '../telemetry/trace-context.js';
import { ApiKeysService } from './api-keys.service.js';

export const EXTERNAL_API_PREFIX = '/api/v1/';

/** Whether the route is part of the external API, which every request must authenticate for. */
export const isExternalApi = (request: FastifyRequest) => request.routeOptions.url?.startsWith(EXTERNAL_API_PREFIX) ?? false;

/**
 * Registered globally and keyed on the path, so no /api/v1 route can be added without it. Missing,
 * malformed, unknown, revoked and expired keys all get the same answer: nothing to probe.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(private readonly apiKeys: ApiKeysService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    if (!isExternalApi(request)) return true;
    const key = await this.apiKeys.authenticate(request.headers['x-api-key']);
    if (!key) throw new AppError('UNAUTHORIZED', 'A valid API key is required in the X-API-Key header');
    request.apiKey = key;
    annotateRequest({ [ATTR_SOURCE]: key.source });
    return true;
  }
}
