import { Gauge, Registry } from 'prom-client';
import { METRICS } from './metric-names';

/**
 * `nest_offload_redis_connected{connection}`: 1 while every connection under that label is ready,
 * else 0; read from ioredis at scrape time, so it costs nothing in between, and a connection added to
 * `connections` later (the webhooks', opened at bootstrap) is reported from then on. Labels: `queue`
 * (BullMQ and the app's reads), `cache` (result cache), `submit` (the API's submissions, with
 * REDIS_MIN_REPLICAS_ACK), `events` (the API's job notices), `deadlines` (the API's start-deadline
 * passes), `listing` (the API's sweeps of the listing index), `webhooks` (the API's deliveries, with webhooks on), `cancel` (the worker's cancel subscriber).
 */
export function registerRedisMetrics(registry: Registry, connections: Iterable<{ connection: string; client: { readonly status: string } }>): void {
  new Gauge({
    name: METRICS.redisConnected,
    help: 'Whether the Redis connections of each role are ready (1) or not (0)',
    labelNames: ['connection'],
    registers: [registry],
    collect() {
      const up = new Map<string, number>();
      for (const { connection, client } of connections) up.set(connection, Math.min(up.get(connection) ?? 1, client.status === 'ready' ? 1 : 0));
      for (const [connection, value] of up) this.set({ connection }, value);
    },
  });
}
