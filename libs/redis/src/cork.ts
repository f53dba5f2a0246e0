import { Cluster } from 'ioredis';
import type { RedisClient } from './redis.factory';

/**
 * From now on, the commands `redis` sends during one turn of the event loop leave in one system
 * call at its end (setImmediate): a finished job's cache writes, its owners' expiry and BullMQ's
 * completion; a submission's watcher, owners and add; and under load those of every request or job
 * handled in that turn. why: on loopback a write costs more CPU than the command it carries (a third
 * of the worker's busy time in the job-path profile, most of a cache hit's extra time); the wait is
 * the rest of the turn. Redis still runs the commands one by one, in order. A Cluster client writes
 * as usual. createRedis applies it to the command connections ('request' and 'durable' roles), not
 * to blocking or subscribed ones, which wait on Redis rather than send to it.
 */
export function coalesceWrites(redis: RedisClient): void {
  if (redis instanceof Cluster) return;
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = (command, stream) => {
    const socket = redis.stream;
    if (socket && !socket.writableCorked && redis.status === 'ready') {
      socket.cork();
      setImmediate(() => socket.uncork());
    }
    return send(command, stream);
  };
}
