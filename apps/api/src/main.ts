import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { Registry } from 'prom-client';
import { loadConfig } from '@app/config';
import { Lifecycle } from '@app/health';
import { JobRegistry } from '@app/jobs';
import { createLogger, NestPinoLogger, QUIET_PATHS, registerRequestLog } from '@app/logging';
import { registerHttpMetrics } from '@app/metrics';
import { checkRedisTargets, watchEvictionPolicy } from '@app/redis';
import { startTracing } from '@app/tracing';
import { registerAdminAccess } from './admin/admin-access';
import { ApiModule } from './api.module';
import { serveApiDocs } from './docs/api-docs';
import { configureFastify, createAdapter } from './http/fastify.setup';
import { JobQueues, QUEUE_REDIS } from './jobs/queue.providers';

let stop: ((signal: string) => Promise<void>) | undefined;
// why: installed first, so a pod stopped while still starting exits at once (it has accepted nothing)
// instead of ignoring SIGTERM as PID 1 and waiting out its grace period.
const onSignal = (signal: string) => (stop ? void stop(signal) : process.exit(0));
process.once('SIGTERM', onSignal);
process.once('SIGINT', onSignal);

async function bootstrap(): Promise<void> {
  const config = loadConfig(process.env, 'api');
  // why before anything connects: a wrong Sentinel set or cluster seed list stops start-up here, naming its variable.
  await checkRedisTargets(config.queueRedis, config.cacheRedis);
  const pino = createLogger(config, 'api');
  const logger = new NestPinoLogger(pino);
  const tracing = startTracing(config, 'api', pino);
  const app = await NestFactory.create<NestFastifyApplication>(ApiModule.forRoot(config, pino, tracing), createAdapter(config), {
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
  registerAdminAccess(fastify, config);
  if (config.apiDocs) serveApiDocs(app, app.get(JobRegistry));
  if (config.queueDashboard) {
    // why loaded only when on: Bull Board costs ~85 ms of CPU and ~8 MB at start, for a page most replicas never serve.
    const { serveQueueDashboard } = await import('./admin/queue-dashboard');
    serveQueueDashboard(fastify, app.get(JobQueues), app.get(JobRegistry), config);
  }
  watchEvictionPolicy(app.get(QUEUE_REDIS), config.redisEvictionCheck, logger);

  stop = async (signal: string) => {
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

  await app.listen(config.port, config.host);
  const types = app.get(JobRegistry).list().map((d) => `${d.name}@${d.version}`);
  const auth = config.apiKeys.length > 0 ? `${config.apiKeys.length} API key(s)` : 'no authentication';
  const traces = tracing ? `; traces to ${config.otel.endpoint}` : '';
  logger.log(`API listening on ${await app.getUrl()} (${auth}) with job types ${types.join(', ')}${traces}`, 'Bootstrap');
}

bootstrap().catch((error: unknown) => {
  // why: a config error is the operator's to fix: print the message without a stack trace.
  console.error(error instanceof Error && error.name === 'ConfigError' ? error.message : error);
  process.exit(1);
});
