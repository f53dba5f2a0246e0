import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { Registry } from 'prom-client';
import { openConfiguredBlobStore } from '@app/blobs';
import { CACHE_REDIS } from '@app/cache';
import { type Config, ConfigError } from '@app/config';
import { Lifecycle } from '@app/health';
import { JobRegistry } from '@app/jobs';
import { createLogger, logUnhandledRejections, NestPinoLogger } from '@app/logging';
import { registerHttpMetrics } from '@app/metrics';
import { checkRedisTargets, logRedisRefusals, watchEvictionPolicy } from '@app/redis';
import { JobProcessor } from './processor/job-processor';
import { WORKER_REDIS } from './processor/worker-redis';
import { WorkerModule } from './worker.module';

/** Past the shutdown deadline, this much longer is allowed for handing jobs back before giving up. */
const HAND_BACK_GRACE_MS = 10_000;

export interface WorkerApp {
  app: NestFastifyApplication;
  logger: NestPinoLogger;
  /** Finishes or hands back the active jobs, closes everything, then exits the process. */
  stop(signal: string): Promise<void>;
}

/**
 * The worker as main.ts runs it, not yet listening on its probe port: the blob store, the logger,
 * Nest with the job processor and its pool, metrics. why a file of its own: main.ts loads it only
 * once the configuration is valid (see there), as it does the API's api.app.ts.
 */
export async function createWorker(config: Config): Promise<WorkerApp> {
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

  const stop = async (signal: string) => {
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
  return { app, logger, stop };
}
