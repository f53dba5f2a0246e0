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
