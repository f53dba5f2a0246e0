import type IORedis from 'ioredis';

/** The queue Redis's `maxmemory-policy`, read from INFO (CONFIG GET is often disabled on managed Redis). */
export async function evictionPolicy(redis: IORedis): Promise<string | undefined> {
  const info = await redis.info('memory');
  return /^maxmemory_policy:(\S+)/m.exec(info)?.[1];
}

/**
 * Checks, each time `redis` (re)connects, that the queue Redis will not evict keys: an evicted job
 * key is a lost job. `warn` logs an error line; `refuse` logs a fatal one and exits the process.
 */
export function watchEvictionPolicy(
  redis: IORedis,
  mode: 'warn' | 'refuse' | 'off',
  logger: { error(message: string, context: string): void; fatal(message: string, context: string): void },
): void {
  if (mode === 'off') return;
  const check = async () => {
    const policy = await evictionPolicy(redis).catch(() => undefined);
    if (policy === undefined || policy === 'noeviction') return;
    const message =
      `the queue Redis has maxmemory-policy "${policy}": under memory pressure it deletes keys, which loses jobs. ` +
      'Set it to "noeviction" (the cache may use a separate Redis with an LRU policy via CACHE_REDIS_URL).';
    if (mode === 'warn') return logger.error(message, 'Redis');
    logger.fatal(`${message} Refusing to run (REDIS_EVICTION_CHECK=refuse).`, 'Redis');
    process.exit(1);
  };
  redis.on('ready', () => void check());
  if (redis.status === 'ready') void check();
}
