import { applyDecorators, CallHandler, ExecutionContext, HttpStatus, Injectable, NestInterceptor, UseInterceptors } from '@nestjs/common';
import { HTTP_CODE_METADATA } from '@nestjs/common/constants';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { from, lastValueFrom, Observable } from 'rxjs';
import { ReadsWithKey, ReadWithKey } from '../auth/read-with-key';
import { IdempotentOperation } from './idempotent-operation';
import { IDEMPOTENCY_KEY_PATTERN, IdempotencyService } from './idempotency.service';
import { requestFingerprint } from './fingerprint';
import { storedAnswerColumns } from './stored-answer';

/**
 * The route's request happens at most once per (source, X-Idempotency-Key); put on routes by
 * @Idempotent(). The handler returns an IdempotentOperation, which the IdempotencyService runs under
 * the claim; the answer it stores is the answer sent, byte for byte.
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
        storedAnswer: request.storedAnswer,
        successStatus: Reflect.getMetadata(HTTP_CODE_METADATA, context.getHandler()) ?? HttpStatus.CREATED,
      },
      // The handler, and the pipes that validate its parameters, run only when the service asks.
      () => lastValueFrom(next.handle()) as Promise<IdempotentOperation>,
    );
    return from(
      answer.then(({ body, location }) => {
        if (location) reply.header('Location', location);
        reply.type('application/json; charset=utf-8');
        return body;
      }),
    );
  }
}

/**
 * A well-formed X-Idempotency-Key's live stored answer, read with the API key: a replay then costs one
 * statement, a first request one fewer. A malformed key is not read (its 422 comes later, in order).
 */
export const STORED_ANSWER: ReadWithKey = {
  name: 'stored-answer',
  sql: `SELECT ${storedAnswerColumns('r')} FROM idempotency_records r
         WHERE r.source = k.source AND r.idempotency_key = $2::varchar AND r.expires_at > now()`,
  parameter: ({ headers }) => {
    const header = headers['x-idempotency-key'];
    return typeof header === 'string' && IDEMPOTENCY_KEY_PATTERN.test(header) ? header : undefined;
  },
  keep: (request, { fingerprint, status, body, location }) => {
    request.storedAnswer = fingerprint == null ? null : { fingerprint: fingerprint as string, status: status as number, body: body as string, location: (location as string | null) ?? null };
  },
};

/**
 * Makes a POST under /api/v1 happen at most once per (source, X-Idempotency-Key); every such route
 * carries it (IdempotencyCoverage refuses to start otherwise), and its handler returns an
 * IdempotentOperation. Scoped to those routes rather than global: an interceptor on a route costs
 * Nest an rxjs pipeline per request, which reads never need.
 */
export const Idempotent = () => applyDecorators(UseInterceptors(IdempotencyInterceptor), ReadsWithKey(STORED_ANSWER));
