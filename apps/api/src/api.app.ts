import { DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { Registry } from 'prom-client';
import { CACHE_REDIS } from '@app/cache';
import type { Config } from '@app/config';
import { Lifecycle } from '@app/health';
import { JobRegistry } from '@app/jobs';
import { createLogger, NestPinoLogger, QUIET_PATHS, registerRequestLog } from '@app/logging';
import { registerHttpMetrics } from '@app/metrics';
import { checkRedisTargets, logRedisRefusals, watchEvictionPolicy } from '@app/redis';
import { startTracing } from '@app/tracing';
import { registerAdminAccess } from './admin/admin-access';
import { ApiModule } from './api.module';
import { serveApiDocs } from './docs/api-docs';
import { configureFastify, createAdapter } from './http/fastify.setup';
import { JobQueues, QUEUE_REDIS } from './queues/queue.providers';

export interface ApiApp {
  app: NestFastifyApplication;
  logger: NestPinoLogger;
  /** Drains and closes everything, then exits the process. */
  stop(signal: string): Promise<void>;
}

/**
 * The API as main.ts runs it, not yet listening: the Fastify adapter and its options, JSON bodies,
 * problem details, request logs, metrics, tracing, docs. why a function of its own: the bench
 * measures routes it adds (`root` wraps ApiModule) against the real thing, not a copy of it.
 */
export async function createApi(config: Config, root: (api: DynamicModule) => DynamicModule = (api) => api): Promise<ApiApp> {
  // why before anything connects: refused credentials, an untrusted certificate or a wrong Sentinel
  // set or seed list stop start-up here, naming the variable; a Redis that is merely down does not.
  await checkRedisTargets(config.queueRedis, config.cacheRedis);
  const pino = createLogger(config, 'api');
  const logger = new NestPinoLogger(pino);
  const tracing = startTracing(config, 'api', pino);
  const app = await NestFactory.create<NestFastifyApplication>(root(ApiModule.forRoot(config, pino, tracing)), createAdapter(config), {
    logger,
    bodyParser: false,
  });
  const lifecycle = app.get(Lifecycle);
  const fastify = app.getHttpAdapter().getInstance();
  // why first: the request's span starts before the other hooks run.
  tracing?.traceHttp(fastify, QUIET_PATHS);
  configureFastify(fastify, config, lifecycle);
  registerRequestLog(fastify, pino);
  registerHttpMetrics(fastify, app.get(Registry));
  registerAdminAccess(fastify, config, app.get(QUEUE_REDIS));
  if (config.apiDocs) serveApiDocs(app, app.get(JobRegistry), config);
  if (config.queueDashboard) {
    // why loaded only when on: Bull Board costs ~85 ms of CPU and ~8 MB at start, for a page most replicas never serve.
    const { serveQueueDashboard } = await import('./admin/queue-dashboard');
    serveQueueDashboard(fastify, app.get(JobQueues), app.get(JobRegistry), config);
  }
  watchEvictionPolicy(app.get(QUEUE_REDIS), config.redisEvictionCheck, logger);
  logRedisRefusals([app.get(QUEUE_REDIS), app.get(CACHE_REDIS)], logger);

  const stop = async (signal: string) => {
    logger.log(`${signal} received: draining`, 'Shutdown');
    lifecycle.beginShutdown();
    setTimeout(() => {
      logger.error(`requests still open ${config.shutdownTimeoutMs} ms after ${signal}; exiting anyway`, 'Shutdown');
      process.exit(1);
    }, config.shutdownTimeoutMs).unref();
    await app.close();
    await tracing?.shutdown();
    logger.log('HTTP server and Redis connections closed; exiting', 'Shutdown');
    process.exit(0);
  };
  return { app, logger, stop };
}
