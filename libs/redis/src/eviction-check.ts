import { Cluster, type Redis } from 'ioredis';
import type { RedisClient } from './redis.factory';

/** A Redis node's `maxmemory-policy`, read from INFO (CONFIG GET is often disabled on managed Redis). */
export async function evictionPolicy(redis: Redis): Promise<string | undefined> {
  const info = await redis.info('memory');
  return /^maxmemory_policy:(\S+)/m.exec(info)?.[1];
}

type EvictionLogger = { error(message: string, context: string): void; fatal(message: string, context: string): void };

/**
 * Checks, each time a connection to a queue-Redis node becomes ready, that the node will not evict
 * keys: an evicted job key is a lost job. `warn` logs an error line; `refuse` logs a fatal one and
 * exits the process. Per node: on Sentinel the connection's node is whichever is primary, so a
 * promoted replica is checked when the apps reconnect to it; on Cluster each primary is checked when
 * the client first sees it as one (at start, and a replica once a failover promotes it).
 */
export function watchEvictionPolicy(redis: RedisClient, mode: 'warn' | 'refuse' | 'off', logger: EvictionLogger): void {
  if (mode === 'off') return;
  const check = async (node: Redis, where: string) => {
    const policy = await evictionPolicy(node).catch(() => undefined);
    if (policy === undefined || policy === 'noeviction') return;
    const message =
      `the queue Redis${where} has maxmemory-policy "${policy}": under memory pressure it deletes keys, which loses jobs. ` +
      'Set it to "noeviction" on every node (the cache may use a separate Redis with an LRU policy via CACHE_REDIS_URL).';
    if (mode === 'warn') return logger.error(message, 'Redis');
    logger.fatal(`${message} Refusing to run (REDIS_EVICTION_CHECK=refuse).`, 'Redis');
    process.exit(1);
  };
  // why the peer address: behind Sentinel the connection's node changes with each failover.
  const run = (node: Redis) => void check(node, ` at ${node.stream?.remoteAddress}:${node.stream?.remotePort}`);
  if (!(redis instanceof Cluster)) {
    redis.on('ready', () => run(redis));
    if (redis.status === 'ready') run(redis);
    return;
  }
  // why on every slot refresh: a replica promoted by a failover keeps its connection (no new
  // 'ready'); it shows up among the primaries after the refresh that follows.
  const primaries = new WeakSet<Redis>();
  const listening = new WeakSet<Redis>();
  const onRefresh = () => {
    for (const node of redis.nodes('slave')) primaries.delete(node);
    for (const node of redis.nodes('master')) {
      if (!listening.has(node)) {
        listening.add(node);
        node.on('ready', () => primaries.has(node) && run(node));
      }
      if (primaries.has(node)) continue;
      primaries.add(node);
      if (node.status === 'ready') run(node);
    }
  };
  redis.on('refresh', onRefresh);
  onRefresh();
}
