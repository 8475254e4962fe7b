import { applyDecorators, CallHandler, ExecutionContext, HttpStatus, Injectable, NestInterceptor, UseInterceptors } from '@nestjs/common';
import { HTTP_CODE_METADATA } from '@nestjs/common/constants';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { from, lastValueFrom, Observable } from 'rxjs';
import { PROBLEM_CONTENT_TYPE } from '../common/problem';
import { requestFingerprint } from './fingerprint';
import { IdempotencyService } from './idempotency.service';
import { IdempotentOperation } from './idempotent-operation';

/**
 * The route's request happens at most once per (source, X-Idempotency-Key); put on routes by
 * @Idempotent(). The handler returns an IdempotentOperation, which the IdempotencyService runs under the
 * claim; the answer it stores, or the one stored before (a replay), is sent byte for byte.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  constructor(private readonly idempotency: IdempotencyService) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<string> {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const reply = context.switchToHttp().getResponse<FastifyReply>();
    const key = IdempotencyService.parseKey(request.headers['x-idempotency-key']);
    const path = request.url.split('?')[0];
    const answer = this.idempotency.execute(
      {
        source: request.apiKey!.source,
        key,
        fingerprint: requestFingerprint(request.method, path, request.body),
        instance: path,
        requestId: String(request.id),
        successStatus: Reflect.getMetadata(HTTP_CODE_METADATA, context.getHandler()) ?? HttpStatus.CREATED,
      },
      // The handler, and the pipes that validate its parameters, run only when the service asks.
      () => lastValueFrom(next.handle()) as Promise<IdempotentOperation>,
    );
    return from(
      answer.then(({ status, body, location, replayed }) => {
        // Nest has set the route's own status before the interceptors ran; a replay may carry another.
        reply.status(status);
        if (location) reply.header('Location', location);
        if (replayed) reply.header('Idempotent-Replayed', 'true');
        reply.type(status >= 400 ? PROBLEM_CONTENT_TYPE : 'application/json; charset=utf-8');
        return body;
      }),
    );
  }
}

/**
 * Makes a POST under /api/v1 happen at most once per (source, X-Idempotency-Key); every such route
 * carries it (IdempotencyCoverage refuses to start otherwise), and its handler returns an
 * IdempotentOperation. Scoped to those routes rather than global: an interceptor on a route costs
 * Nest an rxjs pipeline per request, which reads never need.
 */
export const Idempotent = () => applyDecorators(UseInterceptors(IdempotencyInterceptor));
