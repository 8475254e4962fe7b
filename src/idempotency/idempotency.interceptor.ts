import { applyDecorators, CallHandler, ExecutionContext, HttpStatus, Injectable, NestInterceptor, SetMetadata, UseInterceptors } from '@nestjs/common';
import { HTTP_CODE_METADATA } from '@nestjs/common/constants';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { from, lastValueFrom, Observable } from 'rxjs';
import { AdvisoryLock } from '../database/transaction-context';
import { IdempotencyService } from './idempotency.service';
import { requestFingerprint } from './fingerprint';

const CLAIM_ALSO = 'idempotency:claim-also';

type LockOf = (body: unknown) => AdvisoryLock | null;

/** The route's request happens at most once per (source, X-Idempotency-Key); put on routes by @Idempotent(). */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  constructor(private readonly idempotency: IdempotencyService) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const reply = context.switchToHttp().getResponse<FastifyReply>();
    const key = IdempotencyService.parseKey(request.headers['x-idempotency-key']);
    const path = request.url.split('?')[0];
    return from(
      this.idempotency.execute({
        source: request.apiKey!.source,
        key,
        fingerprint: requestFingerprint(request.method, path, request.body),
        instance: path,
        requestId: String(request.id),
        storedAnswer: request.storedAnswer,
        successStatus: Reflect.getMetadata(HTTP_CODE_METADATA, context.getHandler()) ?? HttpStatus.CREATED,
        alsoLock: (Reflect.getMetadata(CLAIM_ALSO, context.getHandler()) as LockOf | undefined)?.(request.body) ?? null,
        operation: () => lastValueFrom(next.handle(), { defaultValue: undefined }),
        location: () => (reply.getHeader('location') as string | undefined) ?? null,
      }),
    );
  }
}

/**
 * Makes a POST under /api/v1 happen at most once per (source, X-Idempotency-Key); every such route
 * carries it (IdempotencyCoverage refuses to start otherwise). Scoped to those routes rather than
 * global: an interceptor on a route costs Nest an rxjs pipeline per request, which reads never need.
 * `alsoLock` names a lock the handler will take anyway (from the raw body, before validation), so the
 * claim statement takes it too and the handler's own request for it costs nothing.
 */
export const Idempotent = (alsoLock?: LockOf) =>
  applyDecorators(UseInterceptors(IdempotencyInterceptor), ...(alsoLock ? [SetMetadata(CLAIM_ALSO, alsoLock)] : []));
