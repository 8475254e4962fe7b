import { applyDecorators, CallHandler, createParamDecorator, ExecutionContext, Injectable, NestInterceptor, UseInterceptors } from '@nestjs/common';
import { RouteConfig } from '@nestjs/platform-fastify';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { from, lastValueFrom, Observable } from 'rxjs';
import { EntityManager } from 'typeorm';
import { AppError } from '../common/app-error.js';
import { PROBLEM_CONTENT_TYPE } from '../common/problem.js';
import { annotateRequest, ATTR_IDEMPOTENCY_OUTCOME, IdempotencyOutcome } from '../telemetry/trace-context.js';
import { requestFingerprint } from './fingerprint.js';
import { Answer, IdempotencyService, IdempotentCall } from './idempotency.service.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The transaction in which IdempotencyInterceptor claimed this request's idempotency key. */
    idempotencyTransaction?: EntityManager;
  }
}

/**
 * The route's request happens at most once per (source, X-Idempotency-Key); put on routes by
 * @Idempotent(). Before the pipes and the handler run, it claims the key in a new transaction, or answers
 * from the key's record (a replay, byte for byte) or refuses (in use, reused). The handler's writes join
 * that transaction (@IdempotencyTransaction()); its answer, or a business refusal, is stored in it, and
 * all of it commits together. Anything else the route throws (a 422 of the pipe, a 401) rolls it back and
 * leaves the key free.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  constructor(private readonly idempotency: IdempotencyService) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<string> {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const reply = context.switchToHttp().getResponse<FastifyReply>();
    const key = IdempotencyService.parseKey(request.headers['x-idempotency-key']);
    const path = request.url.split('?')[0];
    const call: IdempotentCall = {
      source: request.apiKey!.source,
      key,
      fingerprint: requestFingerprint(request.method, path, request.body),
      instance: path,
      requestId: String(request.id),
    };
    return from(this.answer(call, request, reply, next));
  }

  private async answer(call: IdempotentCall, request: FastifyRequest, reply: FastifyReply, next: CallHandler): Promise<string> {
    const begun = await this.idempotency.begin(call).catch((error: unknown) => {
      const refused = refusedOutcome(error);
      if (refused) traced(refused);
      throw error;
    });
    if (begun.kind === 'replay') {
      traced('replayed');
      return send(reply, begun.answer, true);
    }
    const { claim } = begun;
    request.idempotencyTransaction = claim.manager;
    let answer: Answer;
    try {
      const result: unknown = await lastValueFrom(next.handle());
      // Nest set the route's status before the interceptors ran; the handler may have set a Location.
      const location = reply.getHeader('location');
      answer = { status: reply.statusCode, body: JSON.stringify(result), location: typeof location === 'string' ? location : null };
    } catch (error) {
      const refusal = this.idempotency.refusalAnswer(error, call);
      if (!refusal) {
        await this.idempotency.abandon(claim);
        throw error;
      }
      answer = refusal;
    }
    await this.idempotency.finish(claim, call, answer);
    traced('created');
    return send(reply, answer, false);
  }
}

function traced(outcome: IdempotencyOutcome): void {
  annotateRequest({ [ATTR_IDEMPOTENCY_OUTCOME]: outcome });
}

function refusedOutcome(error: unknown): IdempotencyOutcome | null {
  if (!(error instanceof AppError)) return null;
  return error.code === 'IDEMPOTENCY_KEY_IN_USE' ? 'in_use' : error.code === 'IDEMPOTENCY_KEY_REUSED' ? 'reused' : null;
}

/** The answer as stored, status and headers included; the body is sent as the stored text. */
function send(reply: FastifyReply, answer: Answer, replayed: boolean): string {
  reply.status(answer.status);
  if (answer.location) reply.header('Location', answer.location);
  if (replayed) reply.header('Idempotent-Replayed', 'true');
  reply.type(answer.status >= 400 ? PROBLEM_CONTENT_TYPE : 'application/json; charset=utf-8');
  return answer.body;
}

/** Marks a route in Fastify's route config, where IdempotencyCoverage looks for it. */
export const IDEMPOTENT_ROUTE = 'idempotent';

/**
 * Makes a POST under /api/v1 happen at most once per (source, X-Idempotency-Key); every such route
 * carries it (IdempotencyCoverage refuses to start otherwise), and its handler's writes take the
 * transaction from @IdempotencyTransaction(). Scoped to those routes rather than global: an interceptor
 * on a route costs Nest an rxjs pipeline per request, which reads never need.
 */
export const Idempotent = () => applyDecorators(UseInterceptors(IdempotencyInterceptor), RouteConfig({ [IDEMPOTENT_ROUTE]: true }));

/**
 * The transaction in which IdempotencyInterceptor claimed the request's key: what the handler writes
 * there commits together with the stored answer, or not at all.
 */
export const IdempotencyTransaction = createParamDecorator((_data: unknown, context: ExecutionContext): EntityManager => {
  const transaction = context.switchToHttp().getRequest<FastifyRequest>().idempotencyTransaction;
  // The interceptor runs before any parameter is resolved; reaching here without it is a wiring bug.
  if (!transaction) throw new Error('@IdempotencyTransaction() used on a route without @Idempotent()');
  return transaction;
});
