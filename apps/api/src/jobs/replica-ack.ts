import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '@app/config';
import { type RedisClient, replicaMark, type ReplicaMark, waitForReplicas } from '@app/redis';
import { ApiError } from '../http/api-error';
import type { ServerTiming } from '../http/server-timing';
import { type JobsQueue, SUBMIT_REDIS } from '../queues/queue.providers';

/**
 * How long a submission waits for REDIS_MIN_REPLICAS_ACK replicas before answering 503. Replicas
 * acknowledge in about a millisecond when healthy (see docs/deploy.md), so running out of it means a
 * replica is down or far behind.
 */
export const REPLICA_ACK_TIMEOUT_MS = 1000;

/**
 * "Accepted means durable": with REDIS_MIN_REPLICAS_ACK=N, a submission is answered 202 only once N
 * replicas have the job's write (Redis WAIT), so a failover right after the 202 cannot lose it.
 */
@Injectable()
export class ReplicaAck {
  constructor(
    @Inject(SUBMIT_REDIS) private readonly redis: RedisClient,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  /** Taken before a submission's writes to `queue`, for `confirm` (see replicaMark); none without REDIS_MIN_REPLICAS_ACK. */
  mark(queue: JobsQueue): ReplicaMark | undefined {
    return this.config.redisMinReplicasAck > 0 ? replicaMark(this.redis, queue.toKey('mark')) : undefined;
  }

  /**
   * Resolves once enough replicas have job `id` of `queue`, written since `mark`; a 503
   * NOT_REPLICATED otherwise (also when the connection changed in between). why 503
   * and not 202 "maybe": the client must not rely on a job a failover may lose. The job may still
   * exist and run; a retry of the same input joins it through single flight, or queues it anew if
   * it was lost.
   */
  async confirm(queue: JobsQueue, id: string, mark: ReplicaMark | undefined, timing?: ServerTiming): Promise<void> {
    const wanted = this.config.redisMinReplicasAck;
    if (wanted === 0) return;
    const acked = await waitForReplicas(this.redis, queue.toKey(id), wanted, REPLICA_ACK_TIMEOUT_MS, mark);
    timing?.mark('replicas');
    if (acked < wanted) {
      throw new ApiError(
        'NOT_REPLICATED',
        `The job was queued, but ${acked} of the ${wanted} replicas REDIS_MIN_REPLICAS_ACK asks for confirmed it within ${REPLICA_ACK_TIMEOUT_MS} ms, ` +
          'so a failover could lose it. Retry: an identical submission joins the job if it still exists.',
        { retryAfterSeconds: 2 },
      );
    }
  }
}
