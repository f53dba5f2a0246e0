import type { ConnectionOptions } from 'bullmq';

/** The peer's one queue, shared by its API (producer) and its worker (consumer). */
export const PEER_QUEUE = 'peer-jobs';

/** What both peer processes read from the environment: REDIS_URL, REDIS_PREFIX, CONCURRENCY. */
export interface PeerEnv {
  connection: ConnectionOptions;
  prefix: string;
  concurrency: number;
}

export function peerEnv(env: NodeJS.ProcessEnv = process.env): PeerEnv {
  const url = new URL(env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  return {
    // why: connection options, not a client: @nestjs/bullmq then opens one connection per Queue,
    // Worker and QueueEvents, as the boilerplates' `BullModule.forRoot({ connection })` does.
    connection: { host: url.hostname, port: Number(url.port || 6379), password: url.password || undefined },
    prefix: env.REDIS_PREFIX ?? 'peer',
    concurrency: Number(env.CONCURRENCY ?? 2),
  };
}
