import 'reflect-metadata';
import { loadConfig } from '@app/config';
import { JobRegistry, knownVersions } from '@app/jobs';
import { listeningOn } from '@app/logging';
import { TRACING } from '@app/tracing';
import { WORKER_QUEUES } from './processor/worker-queues';

let stop: ((signal: string) => Promise<void>) | undefined;
// why: installed first, so a pod stopped while still starting exits at once instead of ignoring
// SIGTERM as PID 1; a job it may have taken meanwhile is retried once its lock expires.
const onSignal = (signal: string) => (stop ? void stop(signal) : process.exit(0));
process.once('SIGTERM', onSignal);
process.once('SIGINT', onSignal);

async function bootstrap(): Promise<void> {
  const config = loadConfig(process.env, 'worker');
  // why loaded only now: a setting loadConfig refuses stops the process before Nest, Fastify, BullMQ
  // and the rest load (~0.4 of the ~0.6 CPU-s such a refusal cost).
  const { createWorker } = await import('./worker.app');
  const worker = await createWorker(config);
  const { app, logger } = worker;
  stop = worker.stop;

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

