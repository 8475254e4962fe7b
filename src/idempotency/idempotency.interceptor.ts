import { applyDecorators, CallHandler, createParamDecorator, ExecutionContext, Injectable, NestInterceptor, UseInterceptors } from '@nestjs/common';
import { RouteConfig } from '@nestjs/platform-fastify';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { from, lastValueFrom, Observable } from 'rxjs';
import { AppError } from '../common/app-error.js';
import { PROBLEM_CONTENT_TYPE } from '../common/problem.js';
import { isUniqueViolation, Transaction } from '../database/transaction.js';
import { annotateRequest, ATTR_IDEMPOTENCY_OUTCOME, IdempotencyOutcome } from '../telemetry/trace-context.js';
import { requestFingerprint } from './fingerprint.js';
import { AnsweredBefore, Answer, IdempotencyService, IdempotentCall, Looked } from './idempotency.service.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The transaction whose first read claims this request's idempotency key (IdempotencyInterceptor). */
    idempotencyTransaction?: Transaction;
  }
}

/**
 * The route's request happens at most once per (source, X-Idempotency-Key); put on routes by
 * @Idempotent(). Before the pipes and the handler run, it looks the key up: an earlier answer is sent
 * again (a replay, byte for byte), or refused when it was another request's. Otherwise the handler gets
 * the request's transaction (@IdempotencyTransaction()), whose first read claims the key (409 while
 * another request holds it); the handler's answer, or a business refusal, is stored with the handler's
 * writes and committed with them in one round trip. Anything else the route throws (a 422 of the pipe, a
 * 401) rolls it back and leaves the key free.
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
    try {
      // A second attempt when a write met a committed row: this key's answer, stored meanwhile, or the source's
      // externalId or providerReference, which a create's first attempt does not ask about. Looked at anew, decided again.
      for (let attempt = 1; ; attempt++) {
        const looked = await this.idempotency.look(call);
        if (looked.kind === 'replay') return replayed(reply, looked.answer);
        const tx = this.idempotency.open(call, looked, attempt);
        request.idempotencyTransaction = tx;
        try {
          const answer = await this.perform(tx, call, looked, reply, next);
          traced('created');
          return send(reply, answer, false);
        } catch (error) {
          await this.idempotency.abandon(tx);
          if (error instanceof AnsweredBefore) return replayed(reply, error.answer);
          if (attempt === 1 && isUniqueViolation(error)) continue;
          throw error;
        }
      }
    } catch (error) {
      const refused = refusedOutcome(error);
      if (refused) traced(refused);
      throw error;
    }
  }

  /** Runs the handler in `tx` and commits its writes with its answer, or with its business refusal alone. */
  private async perform(tx: Transaction, call: IdempotentCall, looked: Looked & { kind: 'new' }, reply: FastifyReply, next: CallHandler): Promise<Answer> {
    let answer: Answer;
    try {
      const result: unknown = await lastValueFrom(next.handle());
      // Nest set the route's status before the interceptors ran; the handler may have set a Location.
      const location = reply.getHeader('location');
      answer = { status: reply.statusCode, body: JSON.stringify(result), location: typeof location === 'string' ? location : null };
    } catch (error) {
      const refusal = this.idempotency.refusalAnswer(error, call);
      if (!refusal) throw error;
      tx.discardWrites();
      answer = refusal;
    }
    await this.idempotency.finish(tx, call, looked, answer);
    return answer;
  }
}

function replayed(reply: FastifyReply, answer: Answer): string {
  traced('replayed');
  return send(reply, answer, true);
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
 * The request's transaction, whose first read claims the idempotency key: what the handler writes there
 * commits together with the stored answer, or not at all.
 */
export const IdempotencyTransaction = createParamDecorator((_data: unknown, context: ExecutionContext): Transaction => {
  const transaction = context.switchToHttp().getRequest<FastifyRequest>().idempotencyTransaction;
  // The interceptor runs before any parameter is resolved; reaching here without it is a wiring bug.
  if (!transaction) throw new Error('@IdempotencyTransaction() used on a route without @Idempotent()');
  return transaction;
});
