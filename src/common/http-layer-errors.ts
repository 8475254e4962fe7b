import type { FastifyReply, FastifyRequest } from 'fastify';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { AppError } from './app-error.js';
import { ErrorCode } from './error-codes.js';
import { PROBLEM_CONTENT_TYPE, toProblem } from './problem.js';

/**
 * Errors raised before a request reaches a route, in the README's problem+json form. None of them
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

/** Each connection's responses under way (pipelined requests may have several): a refusal must not be written into one. */
const responding = new WeakMap<Socket, Set<ServerResponse>>();

/**
 * Keeps `responding` through the server's documented `request` event and the responses' documented
 * state: a finished response is dropped when the connection's next request arrives, so a keep-alive
 * connection holds only the responses under way, without a listener per response.
 */
export function trackResponses(server: Server): void {
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    let responses = responding.get(request.socket);
    if (!responses) responding.set(request.socket, (responses = new Set()));
    for (const earlier of responses) if (earlier.writableFinished) responses.delete(earlier);
    responses.add(response);
  });
}

/** Whether a response on this connection has begun and not finished: bytes written now would corrupt it. */
function responseStarted(socket: Socket): boolean {
  for (const response of responding.get(socket) ?? []) if (response.headersSent && !response.writableFinished) return true;
  return false;
}

/**
 * Node's own refusals (malformed or conflicting headers, headers too large, a request that took too
 * long to arrive): written to the socket, which is then closed, since the stream cannot be trusted.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  if (!socket.writable || responseStarted(socket)) {
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
