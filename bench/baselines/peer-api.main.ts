import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { PeerApiModule } from './peer-api.module';
import { PeerEnv, peerEnv } from './peer.queue';

/** The bare peer, or with PEER_API_KEY the equal-guarantee peer (why imported only then: the bare peer loads none of its libraries). */
const peerApiModule = async (env: PeerEnv) => (env.apiKey ? (await import('./guarded-peer.module')).GuardedPeerApiModule.forRoot(env) : PeerApiModule.forRoot(env));

/**
 * The peer's API process: the conventional NestJS + @nestjs/bullmq producer (its worker is
 * peer-worker.main.ts, another process). Env: REDIS_URL, REDIS_PREFIX, PEER_API_KEY (the
 * equal-guarantee peer: guarded-peer.module.ts), PEER_BODY_LIMIT (bytes; Fastify's 1 MiB unless set:
 * the files scenario's base64 images are larger, and a user of this setup raises it), PORT, HOST.
 * why Fastify: the boilerplates mostly keep Nest's default Express, but the template runs on Fastify;
 * the same adapter on both sides keeps the comparison about the job path, not the HTTP framework
 * (the `adapters` scenario measures that difference on its own).
 */
async function main(): Promise<void> {
  const app = await NestFactory.create<NestFastifyApplication>(await peerApiModule(peerEnv()), new FastifyAdapter({ bodyLimit: Number(process.env.PEER_BODY_LIMIT || 1024 * 1024) }), { logger: ['error', 'warn'] });
  // why not enableShutdownHooks: Nest re-raises the signal after closing, and a process killed by a
  // signal writes no --cpu-prof profile; exiting normally after app.close() (hooks included) does.
  for (const signal of ['SIGTERM', 'SIGINT']) process.once(signal, () => void app.close().finally(() => process.exit(0)));
  await app.listen(Number(process.env.PORT ?? 3200), process.env.HOST ?? '127.0.0.1');
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
