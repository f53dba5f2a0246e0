import 'reflect-metadata';
import { loadConfig } from '@app/config';
import { JobRegistry } from '@app/jobs';
import { listeningOn } from '@app/logging';
import { TRACING } from '@app/tracing';

let stop: ((signal: string) => Promise<void>) | undefined;
// why: installed first, so a pod stopped while still starting exits at once (it has accepted nothing)
// instead of ignoring SIGTERM as PID 1 and waiting out its grace period.
const onSignal = (signal: string) => (stop ? void stop(signal) : process.exit(0));
process.once('SIGTERM', onSignal);
process.once('SIGINT', onSignal);

async function bootstrap(): Promise<void> {
  const config = loadConfig(process.env, 'api');
  // why loaded only now: a setting loadConfig refuses stops the process before Nest, Fastify, BullMQ
  // and the rest load (~0.4 of the ~0.6 CPU-s such a refusal cost).
  const { createApi } = await import('./api.app');
  const api = await createApi(config);
  const { app, logger } = api;
  stop = api.stop;
  await app.listen(config.port, config.host);
  const types = app.get(JobRegistry).list().map((d) => `${d.name}@${d.version}`);
  const admins = config.adminApiKeys.length > 0 ? `, ${config.adminApiKeys.length} admin key(s)` : '';
  const auth = `${config.apiKeys.length > 0 ? `${config.apiKeys.length} API key(s)` : 'no authentication'}${admins}`;
  const traces = app.get(TRACING) ? `; traces to ${config.otel.endpoint}` : '';
  logger.log(`API listening on ${listeningOn(app.getHttpServer().address())} (${auth}) with job types ${types.join(', ')}${traces}`, 'Bootstrap');
}

bootstrap().catch((error: unknown) => {
  // why: a config error is the operator's to fix: print the message without a stack trace.
  console.error(error instanceof Error && error.name === 'ConfigError' ? error.message : error);
  process.exit(1);
});

