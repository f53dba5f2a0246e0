import 'reflect-metadata';
import { Controller, DynamicModule, Get, Module, ServiceUnavailableException } from '@nestjs/common';
import { BullModule } from '@nestjs/bullmq';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { PEER_QUEUE, PeerEnv, peerEnv } from './peer.queue';
import { PeerProcessor } from './peer.processor';

@Controller('health')
class PeerWorkerHealthController {
  constructor(private readonly processor: PeerProcessor) {}

  @Get(['live', 'ready'])
  health() {
    if (!this.processor.worker.isRunning()) throw new ServiceUnavailableException('worker not running');
    return { status: 'ok' };
  }
}

@Module({})
class PeerWorkerModule {
  static async forRoot(env: PeerEnv): Promise<DynamicModule> {
    const { connection, prefix, apiKey } = env;
    const bull = [BullModule.forRoot({ connection, prefix }), BullModule.registerQueue({ name: PEER_QUEUE })];
    if (!apiKey) return { module: PeerWorkerModule, imports: bull, controllers: [PeerWorkerHealthController], providers: [PeerProcessor] };
    // The equal-guarantee peer's worker (PEER_API_KEY set) also fills the result cache; why imported
    // only then: the bare peer loads none of its libraries.
    const [{ GuardedPeerProcessor }, { resultCacheModule }] = await Promise.all([import('./guarded-peer.processor'), import('./peer-result-cache')]);
    return {
      module: PeerWorkerModule,
      imports: [...bull, resultCacheModule(env)],
      controllers: [PeerWorkerHealthController],
      providers: [{ provide: PeerProcessor, useClass: GuardedPeerProcessor }],
    };
  }
}

/**
 * The peer's worker process: a Nest app whose @nestjs/bullmq processor runs the jobs, with a tiny
 * HTTP server for /health/{live,ready} only (what a Kubernetes probe would call).
 * Env: REDIS_URL, REDIS_PREFIX, CONCURRENCY, PEER_API_KEY (the equal-guarantee peer), PORT, HOST.
 */
async function main(): Promise<void> {
  const app = await NestFactory.create<NestFastifyApplication>(await PeerWorkerModule.forRoot(peerEnv()), new FastifyAdapter(), { logger: ['error', 'warn'] });
  // why not enableShutdownHooks: Nest re-raises the signal after closing, and a process killed by a
  // signal writes no --cpu-prof profile; exiting normally after app.close() (hooks included) does.
  for (const signal of ['SIGTERM', 'SIGINT']) process.once(signal, () => void app.close().finally(() => process.exit(0)));
  await app.listen(Number(process.env.PORT ?? 3201), process.env.HOST ?? '127.0.0.1');
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
