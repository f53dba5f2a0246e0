import 'reflect-metadata';
import { DynamicModule, Module } from '@nestjs/common';
import { join } from 'node:path';
import { ECHO_API_ERROR, ECHO_REGISTRY, EchoController } from './echo.controller';

@Module({})
class EchoApiModule {}

/**
 * The template's real API (createApi from the build in BENCH_DIST, default ./dist: the same
 * adapter, body limit, JSON parsing, problem details, metrics and hooks as main.ts) plus one bench
 * route, POST /bench/echo/{type} (see EchoController). The cache scenario compares cache hits with it.
 */
async function main(): Promise<void> {
  const dist = process.env.BENCH_DIST ?? join(process.cwd(), 'dist');
  const load = <T>(path: string): T => require(join(dist, path)) as T;
  const { loadConfig } = load<typeof import('../../libs/config/src')>('libs/config/src');
  const { JobRegistry } = load<typeof import('../../libs/jobs/src')>('libs/jobs/src');
  const { ApiError } = load<typeof import('../../apps/api/src/http/api-error')>('apps/api/src/http/api-error');
  const { createApi } = load<typeof import('../../apps/api/src/api.app')>('apps/api/src/api.app');

  const config = loadConfig(process.env, 'api');
  const root = (api: DynamicModule): DynamicModule => ({
    module: EchoApiModule,
    imports: [api],
    controllers: [EchoController],
    providers: [
      { provide: ECHO_REGISTRY, useValue: JobRegistry.forConfig(config) },
      { provide: ECHO_API_ERROR, useValue: ApiError },
    ],
  });
  const { app, stop } = await createApi(config, root);
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
  await app.listen(config.port, config.host);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
