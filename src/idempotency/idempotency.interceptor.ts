import {
  applyDecorators,
  CallHandler,
  createParamDecorator,
  ExecutionContext,
  HttpStatus,
  Injectable,
  NestInterceptor,
  SetMetadata,
  UseInterceptors,
} from '@nestjs/common';
import { HTTP_CODE_METADATA } from '@nestjs/common/constants';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { from, lastValueFrom, Observable } from 'rxjs';
import { ReadsWithKey, ReadWithKey } from '../auth/read-with-key';
import { AdvisoryLock, Transaction } from '../database/database';
import { IDEMPOTENCY_KEY_PATTERN, IdempotencyService } from './idempotency.service';
import { requestFingerprint } from './fingerprint';
import { storedAnswerColumns } from './stored-answer';

const OPTIONS = 'idempotency:options';

export interface IdempotentOptions {
  /** A lock the handler will take anyway (from the raw body, before validation): the claim takes it too. */
  lock?: (body: unknown) => AdvisoryLock | null;
  /**
   * The handler's first statement writes nothing unless CLAIM_HELD, so it is sent with the claim, in
   * its round trip. Nothing may come before it that waits for the database or changes anything.
   */
  behindClaim?: boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The transaction the idempotency claim opened, in which the handler runs (see InTransaction). */
    transaction?: Transaction;
  }
}

/** The route's request happens at most once per (source, X-Idempotency-Key); put on routes by @Idempotent(). */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  constructor(private readonly idempotency: IdempotencyService) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const reply = context.switchToHttp().getResponse<FastifyReply>();
    const key = IdempotencyService.parseKey(request.headers['x-idempotency-key']);
    const path = request.url.split('?')[0];
    const options = (Reflect.getMetadata(OPTIONS, context.getHandler()) as IdempotentOptions | undefined) ?? {};
    return from(
      this.idempotency.execute({
        source: request.apiKey!.source,
        key,
        fingerprint: requestFingerprint(request.method, path, request.body),
        instance: path,
        requestId: String(request.id),
        storedAnswer: request.storedAnswer,
        successStatus: Reflect.getMetadata(HTTP_CODE_METADATA, context.getHandler()) ?? HttpStatus.CREATED,
        alsoLock: options.lock?.(request.body) ?? null,
        behindClaim: options.behindClaim ?? false,
        operation: (tx) => {
          request.transaction = tx;
          return lastValueFrom(next.handle(), { defaultValue: undefined });
        },
        location: () => (reply.getHeader('location') as string | undefined) ?? null,
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
 * carries it (IdempotencyCoverage refuses to start otherwise). Scoped to those routes rather than
 * global: an interceptor on a route costs Nest an rxjs pipeline per request, which reads never need.
 * `options` save the handler round trips (see IdempotentOptions).
 */
export const Idempotent = (options: IdempotentOptions = {}) =>
  applyDecorators(UseInterceptors(IdempotencyInterceptor), ReadsWithKey(STORED_ANSWER), SetMetadata(OPTIONS, options));

/**
 * The handler's transaction: the one holding the idempotency claim, so its writes and the stored
 * answer commit together. Only on routes with @Idempotent().
 */
export const InTransaction = createParamDecorator((_data: unknown, ctx: ExecutionContext): Transaction => {
  const transaction = ctx.switchToHttp().getRequest<FastifyRequest>().transaction;
  // Parameters are resolved inside the interceptor's call, after the claim; without one it is a wiring bug.
  if (!transaction) throw new Error('InTransaction used on a route without @Idempotent()');
  return transaction;
});
