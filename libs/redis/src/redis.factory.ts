import { Cluster, type ClusterOptions, Redis, type RedisOptions } from 'ioredis';
import type { RedisTarget } from '@app/config';
import { coalesceWrites } from './cork';
import { failUnansweredAfter } from './reply-deadline';
import { redisProblem } from './redis-refusal';
import { tlsOptions } from './redis-tls';

/** A connection to a standalone or Sentinel-managed Redis, or to a Redis Cluster. */
export type RedisClient = Redis | Cluster;

/**
 * How a connection is used decides how it behaves while Redis is away:
 * - `request`: serves an HTTP request. Fails fast (no offline queue, a command unanswered for 2 s
 *   fails: reply-deadline.ts) so the API can answer 503 instead of hanging.
 * - `durable`: the worker's job bookkeeping. Waits and retries through an outage, so a finished
 *   job's result is delivered once Redis is back (BullMQ requires maxRetriesPerRequest: null).
 * - `blocking`: waits on Redis rather than sending to it (the worker's cancel subscriber). Never
 *   times out.
 * - `sharded-subscriber`: `blocking`, for sharded pub/sub (SSUBSCRIBE). On Cluster it opens one
 *   connection to the primary of each shard it subscribes on, and moves there after a failover.
 * Each holds for every topology: on Sentinel and Cluster a failover is one more outage, ended by
 * reconnecting to the new primary.
 */
export type RedisRole = 'request' | 'durable' | 'blocking' | 'sharded-subscriber';

const ROLE_OPTIONS: Record<RedisRole, RedisOptions> = {
  request: { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 2000 },
  durable: { enableOfflineQueue: true, maxRetriesPerRequest: null },
  blocking: { enableOfflineQueue: true, maxRetriesPerRequest: null },
  'sharded-subscriber': { enableOfflineQueue: true, maxRetriesPerRequest: null },
};

// why: reconnect forever, backing off to 2 s, so both apps recover by themselves after an outage.
const backOff = (attempt: number) => Math.min(attempt * 100, 2000);

/**
 * why (Sentinel only): a primary demoted by a failover keeps its connections and refuses writes
 * with READONLY; reconnecting asks Sentinel for the new primary, and 2 resends the refused command
 * there. A URL names one server: reconnecting to it would only loop.
 */
const reconnectOnReadOnly = (error: Error) => (error.message.startsWith('READONLY') ? 2 : false);

/** Why each connection's server refuses it, while it does (see redisProblem). */
const refusals = new WeakMap<RedisClient, string>();

/** Opens an ioredis connection to `target` (a redis:// URL, a Sentinel set or a Cluster) for `role`. */
export function createRedis(target: RedisTarget, role: RedisRole, name: string): RedisClient {
  const { enableOfflineQueue, commandTimeout, ...perNode } = ROLE_OPTIONS[role];
  const common: RedisOptions = {
    ...perNode,
    connectionName: name,
    connectTimeout: 5000,
    username: target.username,
    password: target.password,
    tls: tlsOptions(target),
  };
  let client: RedisClient;
  if (target.kind === 'cluster') {
    const options: ClusterOptions = {
      redisOptions: { ...common, commandTimeout },
      enableOfflineQueue,
      clusterRetryStrategy: backOff,
      slotsRefreshTimeout: 2000,
      // why: a failed primary's slots answer CLUSTERDOWN (or nothing) until its replica is promoted,
      // which takes cluster-node-timeout plus an election. Requests give up after ~1.6 s (→ 503);
      // the worker's bookkeeping and blocking reads keep retrying for ~16 s, across a failover.
      ...(role === 'request' ? {} : { maxRedirections: 64, retryDelayOnFailover: 250, retryDelayOnClusterDown: 250, retryDelayOnTryAgain: 250 }),
      // why: a shard channel is served by its own shard only; ioredis' one cluster-wide subscriber
      // would SSUBSCRIBE on whichever node it picked.
      shardedSubscribers: role === 'sharded-subscriber',
    };
    client = new Cluster(target.nodes.map((n) => ({ ...n })), options);
  } else {
    const options: RedisOptions = { ...common, enableOfflineQueue, retryStrategy: backOff };
    client =
      target.kind === 'standalone'
        ? new Redis(target.url, options)
        : new Redis({
            ...options,
            reconnectOnError: reconnectOnReadOnly,
            sentinels: target.sentinels.map((s) => ({ ...s })),
            name: target.name,
            // Sentinels take the same credentials and TLS as the data nodes (as e.g. the Bitnami chart sets them up).
            sentinelUsername: target.username,
            sentinelPassword: target.password,
            enableTLSForSentinelMode: target.tls,
            sentinelTLS: tlsOptions(target),
            // why not ioredis' failoverDetector: in 5.11 a +switch-master heard while the client is
            // reconnecting ends the connection for good (status "end"). A dead primary drops the
            // connection anyway, and a demoted live one answers READONLY (see reconnectOnReadOnly).
          });
  }
  // why a listener: errors surface through the commands that fail and through the readiness probe;
  // without one ioredis would print every failed reconnect attempt as an unhandled error. A refusal
  // (credentials, TLS) is kept, so readiness names the setting to fix instead of "reconnecting".
  const onError = (error: Error) => {
    const problem = redisProblem(error, target);
    if (problem) refusals.set(client, problem);
    else refusals.delete(client);
  };
  client.on('error', onError).on('ready', () => refusals.delete(client));
  if (client instanceof Cluster) client.on('node error', onError);
  if (role === 'request' || role === 'durable') coalesceWrites(client);
  if (commandTimeout !== undefined && !(client instanceof Cluster)) failUnansweredAfter(client, commandTimeout);
  return client;
}

/** Why Redis refuses `redis` (credentials, permissions, certificate), naming the setting to fix; undefined unless it does. */
export function redisRefusal(redis: RedisClient): string | undefined {
  return refusals.get(redis);
}

/** Closes a connection without waiting for a Redis that may be gone. */
export async function closeRedis(redis: RedisClient): Promise<void> {
  if (redis.status === 'end') return;
  await Promise.race([redis.quit().catch(() => undefined), new Promise((r) => setTimeout(r, 1000).unref())]);
  redis.disconnect();
}

/** Resolves when `redis` answers PING within `timeoutMs`, rejects otherwise. */
export async function pingRedis(redis: RedisClient, timeoutMs = 1000): Promise<void> {
  if (redis.status !== 'ready') throw new Error(refusals.get(redis) ?? `redis ${redis.status}`);
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
