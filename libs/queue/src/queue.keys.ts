import { createHash } from 'node:crypto';

/**
 * Names of every Redis key and channel this service uses, under REDIS_PREFIX. Manifests (KEDA
 * triggers), metrics and tests derive theirs from these functions.
 */

/**
 * BullMQ's key prefix for one queue: `<prefix>:{<queue>}`. why a hash tag per queue: BullMQ's
 * scripts touch many keys of a queue at once, which Redis Cluster allows only within one hash
 * slot; one tag per queue lets queues live on different shards. Keys still start with REDIS_PREFIX,
 * so ACL key patterns such as `~nest-offload:*` keep matching.
 */
export function queuePrefix(prefix: string, queue: string): string {
  return `${prefix}:{${queue}}`;
}

/** The key of one of BullMQ's structures of `queue`: `wait` (list), `prioritized` (zset), `active` (list), `events` (stream), … */
export function bullKey(prefix: string, queue: string, structure: string): string {
  return `${queuePrefix(prefix, queue)}:${queue}:${structure}`;
}

/**
 * The id of chunk `index` of fan-out job `parentId`: a UUID derived from both, so that splitting
 * again after a crash adds the same children (BullMQ ignores an add of an id it has) instead of
 * a second set.
 */
export function childJobId(parentId: string, index: number): string {
  const h = createHash('sha256').update(`${parentId}:${index}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** Names of the keys and channels this service writes next to BullMQ's. */
export function queueKeys(prefix: string) {
  return {
    /** Pub/sub channel on which the API asks whichever worker runs a job to abort it. */
    cancelChannel: `${prefix}:cancel`,
    /** Set before a cancel is announced, so a worker that picks the job up later still sees it. */
    cancelMarker: (jobId: string) => `${prefix}:cancel:${jobId}`,
    /** The view of a job cancelled while still queued (BullMQ removes the job itself). */
    cancelledView: (jobId: string) => `${prefix}:cancelled:${jobId}`,
    /** Hash of a fan-out job's children's progress (chunk index → percent), averaged into its own. */
    fanOutProgress: (parentId: string) => `${prefix}:fan-out-progress:${parentId}`,
    /**
     * The record of one Idempotency-Key of one caller (JSON: request fingerprint, planned job id, the
     * job id(s) once known). `digest` hashes the caller and the key, so neither is kept in clear.
     */
    idempotency: (digest: string) => `${prefix}:idempotency:${digest}`,
  };
}

export type QueueKeys = ReturnType<typeof queueKeys>;
