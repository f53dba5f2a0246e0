import type { ConnectionOptions } from 'bullmq';

/** The peer's one queue, shared by its API (producer) and its worker (consumer). */
export const PEER_QUEUE = 'peer-jobs';

/**
 * What the peer processes read from the environment: REDIS_URL, REDIS_PREFIX, CONCURRENCY, and
 * PEER_API_KEY, which makes them the equal-guarantee peer (guarded-peer.module.ts).
 */
export interface PeerEnv {
  redisUrl: string;
  connection: ConnectionOptions;
  prefix: string;
  concurrency: number;
  /** The one API key the equal-guarantee peer accepts; unset: the bare peer. */
  apiKey?: string;
}

export function peerEnv(env: NodeJS.ProcessEnv = process.env): PeerEnv {
  const redisUrl = env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const url = new URL(redisUrl);
  return {
    redisUrl,
    // why: connection options, not a client: @nestjs/bullmq then opens one connection per Queue,
    // Worker and QueueEvents, as the boilerplates' `BullModule.forRoot({ connection })` does.
    connection: { host: url.hostname, port: Number(url.port || 6379), password: url.password || undefined },
    prefix: env.REDIS_PREFIX ?? 'peer',
    concurrency: Number(env.CONCURRENCY ?? 2),
    apiKey: env.PEER_API_KEY || undefined,
  };
}
