import IORedis, { RedisOptions } from 'ioredis';

/**
 * How a connection is used decides how it behaves while Redis is away:
 * - `request`: serves an HTTP request. Fails fast (no offline queue, short timeout) so the API can
 *   answer 503 instead of hanging.
 * - `durable`: the worker's job bookkeeping. Waits and retries through an outage, so a finished
 *   job's result is delivered once Redis is back (BullMQ requires maxRetriesPerRequest: null).
 * - `blocking`: long blocking reads (QueueEvents, subscribers). Never times out.
 */
export type RedisRole = 'request' | 'durable' | 'blocking';

const ROLE_OPTIONS: Record<RedisRole, RedisOptions> = {
  request: { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 2000 },
  durable: { enableOfflineQueue: true, maxRetriesPerRequest: null },
  blocking: { enableOfflineQueue: true, maxRetriesPerRequest: null },
};

/** Opens an ioredis connection for `url` (redis:// or rediss:// with TLS; user and password in the URL). */
export function createRedis(url: string, role: RedisRole, name: string): IORedis {
  return new IORedis(url, {
    ...ROLE_OPTIONS[role],
    connectionName: name,
    connectTimeout: 5000,
    // why: reconnect forever, backing off to 2 s, so both apps recover by themselves after an outage.
    retryStrategy: (attempt) => Math.min(attempt * 100, 2000),
  }).on('error', () => {
    // why: errors surface through the commands that fail and through the readiness probe; without a
    // listener ioredis would print every failed reconnect attempt as an unhandled error.
  });
}

/** Closes a connection without waiting for a Redis that may be gone. */
export async function closeRedis(redis: IORedis): Promise<void> {
  if (redis.status === 'end') return;
  await Promise.race([redis.quit().catch(() => undefined), new Promise((r) => setTimeout(r, 1000).unref())]);
  redis.disconnect();
}

/** Resolves when `redis` answers PING within `timeoutMs`, rejects otherwise. */
export async function pingRedis(redis: IORedis, timeoutMs = 1000): Promise<void> {
  if (redis.status !== 'ready') throw new Error(`redis ${redis.status}`);
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      redis.ping(),
      new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('redis ping timed out')), timeoutMs))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
