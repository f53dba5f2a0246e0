import calculateSlot from 'cluster-key-slot';
import { Cluster, type Redis } from 'ioredis';
import type { RedisClient } from './redis.factory';

/** The WAIT each connection has in flight, if any. */
const inFlight = new WeakMap<Redis, Promise<number>>();
/** How many times each connection has become ready, counted from its first mark. */
const readies = new WeakMap<Redis, { count: number }>();

/** Where a connection stood when writes were sent: the node and how often it had connected. */
export interface ReplicaMark {
  node?: Redis;
  readies: number;
}

function readiesOf(node: Redis): { count: number } {
  let entry = readies.get(node);
  if (!entry) {
    const counter = { count: 0 };
    node.on('ready', () => counter.count++);
    readies.set(node, (entry = counter));
  }
  return entry;
}

/**
 * Marks `redis`'s connection to the primary that holds `key`, before the writes a later
 * waitForReplicas is to cover. why: ioredis resends a command in flight when its connection drops
 * (autoResendUnfulfilledCommands), so a WAIT sent to a primary that then died is answered by the one
 * promoted after it, counting replicas for writes that primary may never have had. A WAIT answered
 * on another connection than the mark's counts none (the Sentinel chaos test lost jobs accepted so).
 */
export function replicaMark(redis: RedisClient, key: string): ReplicaMark {
  try {
    const node = primaryFor(redis, key);
    return { node, readies: readiesOf(node).count };
  } catch {
    return { readies: -1 };
  }
}

/**
 * Waits until `replicas` replicas have acknowledged every write this client has sent to the primary
 * that holds `key`, or `timeoutMs` passes; resolves with how many did (Redis WAIT).
 *
 * why on that connection: WAIT covers the writes of the connection it is sent on. A Cluster client
 * holds one connection per primary and writes `key` through the one that owns its slot, so WAIT
 * goes there, not to a random node as a keyless command would.
 */
export async function waitForReplicas(redis: RedisClient, key: string, replicas: number, timeoutMs: number, mark?: ReplicaMark): Promise<number> {
  const node = primaryFor(redis, key);
  const acked = await waitOn(node, replicas, timeoutMs);
  const moved = mark && (mark.node !== node || mark.readies !== readiesOf(node).count);
  return moved ? 0 : acked;
}

function waitOn(node: Redis, replicas: number, timeoutMs: number): Promise<number> {
  // why join a WAIT in flight: Redis answers one connection's commands in order, so a write whose
  // reply is here while a WAIT's is not was sent before that WAIT, which therefore covers it. One
  // WAIT at a time per connection: when replicas lag, callers do not queue up one timeout each.
  const pending = inFlight.get(node);
  if (pending) return pending;
  const done = () => inFlight.delete(node);
  const wait = (node.wait(replicas, timeoutMs) as Promise<number>).then(
    (acked) => (done(), acked),
    (error: unknown) => {
      done();
      throw error;
    },
  );
  inFlight.set(node, wait);
  return wait;
}

function primaryFor(redis: RedisClient, key: string): Redis {
  if (!(redis instanceof Cluster)) return redis;
  const owner = redis.slots[calculateSlot(key)]?.[0];
  const node = owner === undefined ? undefined : redis.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === owner);
  // why this wording: the API maps it to 503 QUEUE_UNAVAILABLE like every "cluster not ready" error.
  if (!node) throw new Error(`Cluster isn't ready: no primary known for the slot of ${key}`);
  return node;
}
