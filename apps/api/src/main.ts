import 'reflect-metadata';
import type { IncomingMessage } from 'node:http';
import { NestFactory } from '@nestjs/core';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { Logger } from 'nestjs-pino';
import { loadConfig } from '@app/config';
import { Lifecycle } from '@app/health';
import { JobRegistry } from '@app/jobs';
import { requestIdFrom } from '@app/logging';
import { ApiModule } from './api.module';
import { registerJsonBody } from './http/json-body';
import { sendProblem } from './http/problem.reply';

async function bootstrap(): Promise<void> {
  const config = loadConfig();
  const adapter = new FastifyAdapter({
    bodyLimit: config.bodyLimit,
    return503OnClosing: true,
    // The caller's x-request-id (when it is a plain token) becomes the request id: it is echoed
    // back, written on every log line of the request and carried into the job it submits.
    genReqId: (req: IncomingMessage) => requestIdFrom(req.headers['x-request-id']),
    // Errors Fastify's router raises before Nest sees the request (bad URL encoding, long ids).
    frameworkErrors: (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => void sendProblem(error, request, reply),
    routerOptions: { maxParamLength: 1024 },
  });
  const app = await NestFactory.create<NestFastifyApplication>(ApiModule.forRoot(config), adapter, {
    bufferLogs: true,
    bodyParser: false,
  });
  const logger = app.get(Logger);
  app.useLogger(logger);
  const lifecycle = app.get(Lifecycle);
  const fastify = app.getHttpAdapter().getInstance();
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
  registerJsonBody(fastify, config.bodyLimit);

  const shutdown = async (signal: string) => {
    logger.log(`${signal} received: draining`, 'Shutdown');
    lifecycle.beginShutdown();
    setTimeout(() => {
      logger.error(`requests still open ${config.shutdownTimeoutMs} ms after ${signal}; exiting anyway`, 'Shutdown');
      process.exit(1);
    }, config.shutdownTimeoutMs).unref();
    await app.close();
    logger.log('HTTP server and Redis connections closed; exiting', 'Shutdown');
    process.exit(0);
  };
  process.once('SIGTERM', (s) => void shutdown(s));
  process.once('SIGINT', (s) => void shutdown(s));

  await app.listen(config.port, config.host);
  const types = app.get(JobRegistry).list().map((d) => `${d.name}@${d.version}`);
  logger.log(`API listening on ${await app.getUrl()} with job types ${types.join(', ')}`, 'Bootstrap');
}

bootstrap().catch((error: unknown) => {
  // why: a config error is the operator's to fix: print the message without a stack trace.
  console.error(error instanceof Error && error.name === 'ConfigError' ? error.message : error);
  process.exit(1);
});
