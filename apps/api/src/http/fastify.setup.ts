import type { IncomingMessage } from 'node:http';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '@app/config';
import type { Lifecycle } from '@app/health';
import { requestIdFrom } from '@app/logging';
import { registerMultipartBody, registerStreamedBody } from '../files/multipart-body';
import { registerJsonBody } from './json-body';
import { answerClientError, sendProblem } from './problem.reply';
import { registerSecurityHeaders } from './security-headers';

export function createAdapter(config: Config): FastifyAdapter {
  return new FastifyAdapter({
    bodyLimit: config.bodyLimit,
    // Slow-loris clients (trickled headers or body) are cut off after REQUEST_TIMEOUT_MS; why the
    // checking interval: Node checks those timeouts every 30 s by default, which doubles them.
    requestTimeout: config.requestTimeoutMs,
    http: { connectionsCheckingInterval: 1000, headersTimeout: Math.min(config.requestTimeoutMs, 60_000) },
    // Malformed HTTP (bad request line, bad chunking, header overflow) gets a problem too.
    clientErrorHandler: answerClientError,
    return503OnClosing: true,
    // The caller's x-request-id (when it is a plain token) becomes the request id: it is echoed
    // back, written on every log line of the request and carried into the job it submits.
    genReqId: (req: IncomingMessage) => requestIdFrom(req.headers['x-request-id']),
    // Errors Fastify's router raises before Nest sees the request (bad URL encoding, long ids).
    frameworkErrors: (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => void sendProblem(error, request, reply),
    routerOptions: { maxParamLength: 1024 },
  });
}

/** Hooks on the Fastify instance under Nest: request ids, JSON bodies, security headers, draining. */
export function configureFastify(fastify: FastifyInstance, config: Config, lifecycle: Lifecycle): void {
  fastify.addHook('onRequest', (request, reply, done) => {
    void reply.header('x-request-id', request.id);
    done();
  });
  fastify.addHook('onSend', (request, reply, payload, done) => {
    // why: while draining, each response closes its keep-alive connection, so the server can stop
    // once in-flight requests are answered instead of waiting out idle client connections.
    if (lifecycle.shuttingDown) void reply.header('connection', 'close');
    done(null, payload);
  });
  registerSecurityHeaders(fastify);
  registerJsonBody(fastify, config.bodyLimit);
  registerMultipartBody(fastify);
  registerStreamedBody(fastify);
}
