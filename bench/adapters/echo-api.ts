import 'reflect-metadata';
import { DynamicModule, MiddlewareConsumer, Module, NestModule, RequestMethod } from '@nestjs/common';
import { join } from 'node:path';
import { ECHO_API_ERROR, ECHO_REGISTRY, EchoController } from './echo.controller';

/** Requires a module of the built apps in `dist` (BENCH_DIST: the build under test, not bench/.build's copy). */
export const fromDist =
  (dist: string) =>
  <T>(path: string): T =>
    require(join(dist, path)) as T;

/**
 * The template's real API (createApi from the build in `dist`: the same adapter, body limit, JSON
 * parsing, problem details, metrics and hooks as main.ts) plus one bench route, POST
 * /bench/echo/{type} (see EchoController), not yet listening. The route admits its callers as /v1
 * does (AccessMiddleware: with API_KEYS, a key checked), so the ceiling
 * a cache hit is held to pays what any request of the API pays.
 */
export async function createEchoApi(dist: string, env: NodeJS.ProcessEnv) {
  const load = fromDist(dist);
  const { loadConfig } = load<typeof import('../../libs/config/src')>('libs/config/src');
  const { JobRegistry } = load<typeof import('../../libs/jobs/src')>('libs/jobs/src');
  const { ApiError } = load<typeof import('../../apps/api/src/http/api-error')>('apps/api/src/http/api-error');
  const { createApi } = load<typeof import('../../apps/api/src/api.app')>('apps/api/src/api.app');
  const { AccessMiddleware } = load<typeof import('../../apps/api/src/security/access.middleware')>('apps/api/src/security/access.middleware');

  @Module({})
  class EchoApiModule implements NestModule {
    configure(consumer: MiddlewareConsumer): void {
      consumer.apply(AccessMiddleware).forRoutes({ path: 'bench/*splat', method: RequestMethod.ALL });
    }
  }

  const config = loadConfig(env, 'api');
  const registry = JobRegistry.forConfig(config);
  const root = (api: DynamicModule): DynamicModule => ({
    module: EchoApiModule,
    imports: [api],
    controllers: [EchoController],
    providers: [
      { provide: ECHO_REGISTRY, useValue: registry },
      { provide: ECHO_API_ERROR, useValue: ApiError },
    ],
  });
  return { config, registry, ...(await createApi(config, root)) };
}
