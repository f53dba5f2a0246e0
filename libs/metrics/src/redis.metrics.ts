import { Gauge, Registry } from 'prom-client';
import { METRICS } from './metric-names';

/**
 * `nest_offload_redis_connected{connection}`: 1 while every connection of that role is ready, else 0;
 * read from ioredis at scrape time, so it costs nothing in between. Roles: `queue` (BullMQ and the
 * API's reads), `cache` (result cache), `events` (the API's event-stream readers), `cancel` (the
 * worker's cancel subscriber).
 */
export function registerRedisMetrics(registry: Registry, connections: ReadonlyArray<{ role: string; redis: { readonly status: string } }>): void {
  new Gauge({
    name: METRICS.redisConnected,
    help: 'Whether the Redis connections of each role are ready (1) or not (0)',
    labelNames: ['connection'],
    registers: [registry],
    collect() {
      const up = new Map<string, number>();
      for (const { role, redis } of connections) up.set(role, Math.min(up.get(role) ?? 1, redis.status === 'ready' ? 1 : 0));
      for (const [connection, value] of up) this.set({ connection }, value);
    },
  });
}
