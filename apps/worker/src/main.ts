import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { openConfiguredBlobStore } from '@app/blobs';
import { CACHE_REDIS } from '@app/cache';
import { ConfigError, loadConfig } from '@app/config';
import { Lifecycle } from '@app/health';
import { JobRegistry, knownVersions } from '@app/jobs';
import { createLogger, listeningOn, logUnhandledRejections, NestPinoLogger } from '@app/logging';
import { registerHttpMetrics } from '@app/metrics';
import { checkRedisTargets, logRedisRefusals, watchEvictionPolicy } from '@app/redis';
import { TRACING } from '@app/tracing';
import { Registry } from 'prom-client';
import { JobProcessor } from './processor/job-processor';
import { WORKER_REDIS } from './processor/worker-redis';
import { WORKER_QUEUES } from './processor/worker-queues';
import { WorkerModule } from './worker.module';

/** Past the shutdown deadline, this much longer is allowed for handing jobs back before giving up. */
const HAND_BACK_GRACE_MS = 10_000;

let stop: ((signal: string) => Promise<void>) | undefined;
// why: installed first, so a pod stopped while still starting exits at once instead of ignoring
// SIGTERM as PID 1; a job it may have taken meanwhile is retried once its lock expires.
const onSignal = (signal: string) => (stop ? void stop(signal) : process.exit(0));
process.once('SIGTERM', onSignal);
process.once('SIGINT', onSignal);

async function bootstrap(): Promise<void> {
  const config = loadConfig(process.env, 'worker');
  // why before anything connects: refused credentials, an untrusted certificate or a wrong Sentinel
  // set or seed list stop start-up here, naming the variable; a Redis that is merely down does not.
  await checkRedisTargets(config.queueRedis, config.cacheRedis);
  const blobs = await openConfiguredBlobStore(config.blobStore, JobRegistry.forConfig(config).fileTypes());
  if ('problem' in blobs) throw new ConfigError([blobs.problem]);
  const pino = createLogger(config, 'worker');
  if ('warning' in blobs && blobs.warning) pino.warn(blobs.warning);
  logUnhandledRejections(pino);
  const logger = new NestPinoLogger(pino);
  const app = await NestFactory.create<NestFastifyApplication>(WorkerModule.forRoot(config, pino, blobs.store), new FastifyAdapter(), {
    logger,
    bodyParser: false,
  });
  registerHttpMetrics(app.getHttpAdapter().getInstance(), app.get(Registry));

  const lifecycle = app.get(Lifecycle);
  const processor = app.get(JobProcessor);
  watchEvictionPolicy(app.get(WORKER_REDIS), config.redisEvictionCheck, logger);
  logRedisRefusals([app.get(WORKER_REDIS), app.get(CACHE_REDIS)], logger);

  stop = async (signal: string) => {
    logger.log(`${signal} received: finishing active jobs for up to ${config.shutdownTimeoutMs} ms`, 'Shutdown');
    lifecycle.beginShutdown();
    const giveUp = setTimeout(() => {
      logger.error('could not hand jobs back in time (Redis unreachable?); their locks will expire and another worker retries them', 'Shutdown');
      process.exit(1);
    }, config.shutdownTimeoutMs + HAND_BACK_GRACE_MS).unref();
    await processor.drain(config.shutdownTimeoutMs);
    await app.close();
    blobs.store?.close();
    clearTimeout(giveUp);
    logger.log('worker stopped cleanly', 'Shutdown');
    process.exit(0);
  };

  await app.listen(config.workerPort, config.host);
  const queues = app.get<string[]>(WORKER_QUEUES);
  const registry = app.get(JobRegistry);
  const types = registry
    .list()
    .filter((d) => queues.includes(d.queue))
    .map((d) => `${d.name}@${knownVersions(d).join('+')}`);
  const idle = queues.filter((queue) => !registry.queues().includes(queue));
  if (idle.length > 0) logger.warn(`no job type uses queue ${idle.join(', ')}: this worker idles on it (drop it from WORKER_QUEUES and DEPLOYED_QUEUES)`, 'Bootstrap');
  const traces = app.get(TRACING) ? `; traces to ${config.otel.endpoint}` : '';
  logger.log(
    `worker consuming queues ${queues.join(', ')} with ${config.workerThreads} threads; probes on ${listeningOn(app.getHttpServer().address())}; job types ${types.join(', ')}${traces}`,
    'Bootstrap',
  );
}

bootstrap().catch((error: unknown) => {
  console.error(error instanceof Error && error.name === 'ConfigError' ? error.message : error);
  process.exit(1);
});

