import { DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { Registry } from 'prom-client';
import { openConfiguredBlobStore } from '@app/blobs';
import { CACHE_REDIS } from '@app/cache';
import { type Config, ConfigError } from '@app/config';
import { Lifecycle } from '@app/health';
import { JobRegistry } from '@app/jobs';
import { createLogger, logUnhandledRejections, NestPinoLogger, QUIET_PATHS, registerRequestLog } from '@app/logging';
import { registerHttpMetrics } from '@app/metrics';
import { checkRedisTargets, logRedisRefusals, watchEvictionPolicy } from '@app/redis';
import { type Tracing, TRACING } from '@app/tracing';
import { serveBrowserPages } from './admin/browser-pages';
import { ApiModule } from './api.module';
import { configureFastify, createAdapter } from './http/fastify.setup';
import { QUEUE_REDIS } from './queues/queue.providers';

export interface ApiApp {
  app: NestFastifyApplication;
  logger: NestPinoLogger;
  /** Drains and closes everything, then exits the process. */
  stop(signal: string): Promise<void>;
}

/**
 * The API as main.ts runs it, not yet listening: the Fastify adapter and its options, JSON bodies,
 * problem details, request logs, metrics, tracing, the browser pages. why a function of its own: the
 * bench measures routes it adds (`root` wraps ApiModule) against the real thing, not a copy of it.
 */
export async function createApi(config: Config, root: (api: DynamicModule) => DynamicModule = (api) => api): Promise<ApiApp> {
  // why before anything connects: refused credentials, an untrusted certificate or a wrong Sentinel
  // set or seed list stop start-up here, naming the variable; a Redis that is merely down does not.
  await checkRedisTargets(config.queueRedis, config.cacheRedis);
  const blobs = await openConfiguredBlobStore(config.blobStore, JobRegistry.forConfig(config).fileTypes());
  if ('problem' in blobs) throw new ConfigError([blobs.problem]);
  const pino = createLogger(config, 'api');
  if ('warning' in blobs && blobs.warning) pino.warn(blobs.warning);
  logUnhandledRejections(pino);
  const logger = new NestPinoLogger(pino);
  const app = await NestFactory.create<NestFastifyApplication>(root(ApiModule.forRoot(config, pino, blobs.store)), createAdapter(config), {
    logger,
    bodyParser: false,
  });
  const lifecycle = app.get(Lifecycle);
  const fastify = app.getHttpAdapter().getInstance();
  // why first: the request's span starts before the other hooks run.
  app.get<Tracing | null>(TRACING)?.traceHttp(fastify, QUIET_PATHS);
  configureFastify(fastify, config, lifecycle);
  registerRequestLog(fastify, pino);
  registerHttpMetrics(fastify, app.get(Registry));
  await serveBrowserPages(app, config, app.get(QUEUE_REDIS));
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
    blobs.store?.close();
    logger.log('HTTP server and Redis connections closed; exiting', 'Shutdown');
    process.exit(0);
  };
  return { app, logger, stop };
}
