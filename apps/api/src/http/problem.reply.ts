import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { toProblem } from './problem';

/** Sends the problem+json answer for `error`. Used by the Nest filter and by Fastify's router errors. */
export function sendProblem(error: unknown, request: FastifyRequest, reply: FastifyReply): ReturnType<typeof toProblem> {
  const problem = toProblem(error);
  problem.body.instance = request.url;
  void reply
    .status(problem.status)
    .headers(problem.headers)
    .header('x-request-id', request.id)
    .header('content-type', 'application/problem+json; charset=utf-8')
    .send(JSON.stringify(problem.body));
  return problem;
}

const CLIENT_ERRORS: Record<string, [number, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'Request header fields too large'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request timeout: the request was not received in time'],
};

/**
 * Answers errors Node's HTTP parser raises before any route runs, as problem+json, and closes the
 * connection (its framing can no longer be trusted).
 */
export function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  if (!socket.writable) return void socket.destroy();
  const [status, detail] = CLIENT_ERRORS[error.code ?? ''] ?? [400, 'Malformed HTTP request'];
  const body = JSON.stringify({ type: 'about:blank', title: detail.split(':')[0], status, code: 'MALFORMED_REQUEST', detail });
  socket.end(
    `HTTP/1.1 ${status} ${detail.split(':')[0]}\r\nconnection: close\r\ncontent-type: application/problem+json; charset=utf-8\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}
