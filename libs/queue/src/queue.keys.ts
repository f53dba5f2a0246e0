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
 * BullMQ's deduplication key of `queue` for deduplication id `id` (its `de:` key, bullmq 6), holding
 * the id of the job that took it: the API adds every job with its content key as that id (single
 * flight), and the worker may keep it past the job's completion (see single-flight.ts).
 */
export function deduplicationKey(prefix: string, queue: string, id: string): string {
  return bullKey(prefix, queue, `de:${id}`);
}

/**
 * A key of fair share's (see fair-share.ts) in `queue`: `ring`, `in-ring`, `limits`, `parked`, `seq`,
 * `waiting:<caller>`, `running:<caller>`; `''` is their common base. In the queue's hash tag, so one
 * script touches them and BullMQ's keys together, on Redis Cluster too. `parked` (a sorted set of
 * every parked job) is what KEDA and MAX_BACKLOG count beside `wait` and `prioritized`.
 */
export function fairKey(prefix: string, queue: string, part: string): string {
  return `${queuePrefix(prefix, queue)}:fair:${part}`;
}

/**
 * BullMQ's structure under bullKey() for the jobs of each state: `wait` (list, LLEN), `prioritized`
 * and `delayed` (sorted sets, ZCARD), `active` (list). KEDA's redis triggers read these keys.
 */
export const BULL_STRUCTURES = { waiting: 'wait', prioritized: 'prioritized', delayed: 'delayed', active: 'active' } as const;

/**
 * The id of chunk `index` of fan-out job `parentId`: a UUID derived from both, so that splitting
 * again after a crash adds the same children (BullMQ ignores an add of an id it has) instead of
 * a second set.
 */
export function childJobId(parentId: string, index: number): string {
  return uuidOf(createHash('sha256').update(`${parentId}:${index}`).digest('hex'));
}

/**
 * The id of the job a replay of the dead letter of job `jobId`, failed at `failedAt` (epoch ms),
 * submits: a UUID derived from both, so a replay repeated after one that submitted and never recorded
 * it (see dead-letters.ts) adds the same job, which BullMQ adds at most once, while a later failure of
 * that new job is a dead letter of its own, with an id of its own to be replayed under. why SHA-1:
 * the sweep of lapsed claims derives it in Lua too (RETURN_LAPSED_CLAIMS), where Redis has only
 * `redis.sha1hex`; keep the two in step.
 */
export function replayJobId(jobId: string, failedAt: number): string {
  return uuidOf(createHash('sha1').update(`replay\n${jobId}\n${failedAt}`).digest('hex'));
}

/** A UUID (version 5, variant 1 digits) from the first 32 hex digits of a hash. */
function uuidOf(h: string): string {
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/**
 * The BullMQ job scheduler of schedule `name` of job type `type` (see JobSchedule). BullMQ names
 * each tick's job `repeat:<scheduler>:<ms>`, so the ids of scheduled jobs say what made them.
 */
export function schedulerId(type: string, name: string): string {
  return `${type}:${name}`;
}

/** The id BullMQ gives the tick of scheduler `scheduler` due at `ms` (epoch milliseconds). */
export function scheduledJobId(scheduler: string, ms: number): string {
  return `repeat:${scheduler}:${ms}`;
}

/** The id of a job a declared schedule made (`repeat:<type>:<name>:<ms>`; see schedulerId). */
export const SCHEDULED_JOB_ID = /^repeat:[a-z][a-z0-9-]{0,62}:[a-z][a-z0-9-]{0,62}:\d{1,16}$/;

/**
 * The BullMQ queue of webhook deliveries. why a name outside QUEUE_NAME (a leading underscore): no
 * job type can declare it, so deliveries never share a queue with jobs; it has its own hash tag.
 */
export const WEBHOOK_QUEUE = '_webhooks';

/**
 * The id of the delivery of job `jobId`'s final view to `url` for the caller of `scope`: one per
 * job, URL and caller, so a retried or joined submission of the same caller with the same URL adds
 * nothing, while another caller joining the job gets its own (signed with its key's name). It is
 * also the `webhook-id` receivers dedupe on.
 */
export function webhookDeliveryId(jobId: string, url: string, scope: string): string {
  return `msg_${createHash('sha256').update(`${jobId}\n${url}\n${scope}`).digest('hex').slice(0, 32)}`;
}

/**
 * The sharded pub/sub channel of one API replica for the jobs of `queue`: every notice for a job it
 * waits on arrives there (see notice.protocol.ts). why per replica and queue, not per job: a replica
 * subscribes once at start instead of once per waited job (two commands and a round trip each), and
 * the queue's hash tag keeps it on the shard that holds the queue, so the notice scripts publish to
 * it on Redis Cluster.
 */
export function noticeChannel(prefix: string, queue: string, replicaId: string): string {
  return `${queuePrefix(prefix, queue)}:api:${replicaId}`;
}

/**
 * The set of the callers (scopes) that submitted or joined job `jobId` of `queue`: with API keys,
 * only they may read, stream or cancel it. Kept as long as the job or its cached result is readable.
 * why in the queue's hash slot: written with the job, on the same connection, one WAIT covers both
 * (REDIS_MIN_REPLICAS_ACK), on Redis Cluster too, and a failover of the job's shard takes both or neither.
 */
export function ownersKey(prefix: string, queue: string, jobId: string): string {
  return `${queuePrefix(prefix, queue)}:owners:${jobId}`;
}

/**
 * The listing index of `scope`'s jobs of `queue` (GET /v1/jobs), or of those it tagged `tag`: a sorted
 * set, member the job id, score when the caller submitted it (epoch ms). With `scope` undefined, every
 * caller's jobs (GET /admin/jobs without `caller=`; written only with API keys, else the one scope is
 * everyone). In the queue's hash slot like the job and its owners (see job-index.ts).
 */
export function listingKey(prefix: string, queue: string, scope?: string, tag?: string): string {
  const base = `${queuePrefix(prefix, queue)}:listing`;
  if (scope === undefined) return `${base}-all`;
  return tag === undefined ? `${base}:${scope}` : `${base}:${scope}:tag:${tag}`;
}

/** The tags each caller gave job `jobId` of `queue` (a hash: scope → tags joined by commas); only for tagged jobs. */
export function jobTagsKey(prefix: string, queue: string, jobId: string): string {
  return `${queuePrefix(prefix, queue)}:tags:${jobId}`;
}

/** When each listed job of `queue` stops being readable (a sorted set: job id → epoch ms); the listing forgets it then. */
export function listingEndsKey(prefix: string, queue: string): string {
  return `${queuePrefix(prefix, queue)}:listing-ends`;
}

/**
 * The dead letters of `queue` (see dead-letters.ts): a sorted set, member the id of a job that failed
 * for good, score when it failed (epoch ms). In the queue's hash slot, like the job and its owners.
 */
export function deadLettersKey(prefix: string, queue: string): string {
  return `${queuePrefix(prefix, queue)}:dead-letters`;
}

/**
 * The dead letters of `queue` a replay has claimed and not yet submitted (see dead-letters.ts): a
 * sorted set, member the job id, score when the claim lapses (epoch ms). In the queue's hash slot.
 */
export function deadLetterClaimsKey(prefix: string, queue: string): string {
  return `${queuePrefix(prefix, queue)}:dead-letter-claims`;
}

/** The dead letter of job `jobId` of `queue`: a hash of what a replay needs (see dead-letters.ts). */
export function deadLetterKey(prefix: string, queue: string, jobId: string): string {
  return `${queuePrefix(prefix, queue)}:dead-letter:${jobId}`;
}

/** The set of the notice channels (API replicas) waiting on job `jobId` of `queue` (see notice.protocol.ts). */
export function watchersKey(prefix: string, queue: string, jobId: string): string {
  return `${queuePrefix(prefix, queue)}:watch:${jobId}`;
}

/** Names of the keys and channels this service writes next to BullMQ's. */
export function queueKeys(prefix: string) {
  return {
    /** A job type's cached result (JSON), by the job's content key (`<type>:v<version>:<digest>`, see contentKey). */
    cacheEntry: (contentKey: string) => `${prefix}:cache:${contentKey}`,
    /** The content key of the job whose result is cached, by job id: GET /v1/jobs/{id} once BullMQ has dropped the job. */
    cacheId: (jobId: string) => `${prefix}:cache-id:${jobId}`,
    /** Pub/sub channel on which the API asks whichever worker runs a job to abort it. */
    cancelChannel: `${prefix}:cancel`,
    /**
     * The view of a job that ended while still queued, cancelled or expired (BullMQ removes the job
     * itself). why the name: it held cancelled views first, and a rolling update keeps finding them.
     */
    cancelledView: (jobId: string) => `${prefix}:cancelled:${jobId}`,
    /**
     * Hash of a fan-out job's children's progress (chunk index → percent), averaged into its own. In
     * the parent's queue's hash slot, so one script updates both.
     */
    fanOutProgress: (queue: string, parentId: string) => `${queuePrefix(prefix, queue)}:fan-out-progress:${parentId}`,
    /**
     * The record of one Idempotency-Key of one caller (JSON: request fingerprint, planned job id, the
     * job id(s) once known). `digest` hashes the caller and the key, so neither is kept in clear.
     */
    idempotency: (digest: string) => `${prefix}:idempotency:${digest}`,
    /** The rate-limit state (GCRA) of one client: `key:<name>`, or `ip:<hash>` of its address. */
    rateLimit: (client: string) => `${prefix}:ratelimit:${client}`,
    /** The failed authentications (GCRA) of one client address, hashed. */
    authFailures: (addressDigest: string) => `${prefix}:auth-failures:${addressDigest}`,
    /** A browser session of the docs and dashboard: `digest` hashes its cookie's token, which Redis never holds. */
    adminSession: (digest: string) => `${prefix}:admin-session:${digest}`,
    /** The sessions of one key (`<role>:<name>`): their digests, by when they expire. */
    adminSessions: (holder: string) => `${prefix}:admin-sessions:${holder}`,
  };
}

export type QueueKeys = ReturnType<typeof queueKeys>;

/**
 * The record of upload `id` (POST /v1/uploads): whose it is, for which declared file, and the file
 * once it arrived through the API. It expires with the upload.
 */
export function uploadKey(prefix: string, id: string): string {
  return `${prefix}:upload:${id}`;
}

/**
 * The leases of the blob store's content-addressed objects (see blob-leases.ts): `leases`, a sorted
 * set of object keys by when they stop being needed (epoch ms), and `deleting`, those a sweep took
 * to delete, by when it gives up. why a hash tag of their own: one script touches both, on Redis
 * Cluster too.
 */
export function blobLeaseKey(prefix: string, part: 'leases' | 'deleting'): string {
  return `${prefix}:{blobs}:${part}`;
}
