import type { FastifyReply, FastifyRequest } from 'fastify';
import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import { AppError } from './app-error';
import { ErrorCode } from './error-codes';
import { PROBLEM_CONTENT_TYPE, toProblem } from './problem';

/**
 * Errors raised before a request reaches a route, in the contract's problem+json form. None of them
 * echoes the URL: it is what was wrong, and the caller already has it.
 */
const NO_INSTANCE = '';

/**
 * The router's refusals (Fastify `frameworkErrors`): a URL that does not decode, or a path parameter
 * longer than any id. Both name no resource, so both are the 404 any unknown id gets.
 */
export function answerFrameworkError(_error: Error, request: FastifyRequest, reply: FastifyReply): void {
  const problem = toProblem(new AppError('NOT_FOUND', 'No such route or resource'), NO_INSTANCE, String(request.id));
  reply.status(problem.body.status).header('X-Request-Id', request.id).type(PROBLEM_CONTENT_TYPE).send(problem.body);
}

function clientErrorCode(error: NodeJS.ErrnoException): [ErrorCode, string] {
  if (error.code === 'HPE_HEADER_OVERFLOW') return ['HEADERS_TOO_LARGE', 'The request headers are too large'];
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') return ['REQUEST_TIMEOUT', 'The request was not received in time'];
  return ['MALFORMED_REQUEST', 'The request is not valid HTTP'];
}

/**
 * Node's own refusals (malformed or conflicting headers, headers too large, a request that took too
 * long to arrive): written to the socket, which is then closed, since the stream cannot be trusted.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  if (!socket.writable || (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent) {
    // A response was already started on this socket: nothing sane can be added to it.
    socket.destroy(error);
    return;
  }
  const [code, detail] = clientErrorCode(error);
  const requestId = randomUUID();
  const { body, headers } = toProblem(new AppError(code, detail), NO_INSTANCE, requestId);
  const payload = JSON.stringify(body);
  const head = [
    `HTTP/1.1 ${body.status} ${body.title}`,
    `Content-Type: ${PROBLEM_CONTENT_TYPE}`,
    `Content-Length: ${Buffer.byteLength(payload)}`,
    `X-Request-Id: ${requestId}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    'Connection: close',
  ];
  socket.end(`${head.join('\r\n')}\r\n\r\n${payload}`);
}
