import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import type { RedisClient } from '@app/redis';
import { CONFIG, type Config } from '@app/config';
import { Lifecycle } from '@app/health';
import { queueKeys } from '@app/queue';
import { ApiError } from '../http/api-error';
import { QUEUE_REDIS } from '../queues/queue.providers';
import type { Claim, IdempotencyKey, SubmitOnce } from '../jobs/submit-hooks';
import { parseIdempotencyKey, recordDigest, requestFingerprint } from './idempotency-key';
import { IdempotencyStore } from './idempotency.store';

/**
 * How long a request may hold a key between claiming it and recording its job ids (normally a few
 * ms: the cache lookup and one add). A retry that finds the key pending longer takes it over.
 */
const LEASE_MS = 5000;
const POLL_MS = { first: 10, max: 200 };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Idempotency-Key for POSTs: the first request with a key enqueues, every later one with the same key
 * and fingerprint (from any replica, for IDEMPOTENCY_TTL_SECONDS) gets what it produced, one still in
 * progress is waited for, and another request under the same key is a 422. The record is claimed
 * atomically in Redis before the jobs are enqueued, so two replicas racing on one key enqueue once.
 */
@Injectable()
export class Idempotency implements SubmitOnce {
  private readonly store: IdempotencyStore;
  private readonly keys: ReturnType<typeof queueKeys>;

  constructor(
    @Inject(QUEUE_REDIS) redis: RedisClient,
    private readonly lifecycle: Lifecycle,
    @Inject(CONFIG) private readonly config: Config,
  ) {
    this.store = new IdempotencyStore(redis);
    this.keys = queueKeys(config.redisPrefix);
  }

  /** The request's Idempotency-Key for the caller of `scope` (see parseIdempotencyKey). */
  keyOf(header: string | string[] | undefined, scope: string): IdempotencyKey | undefined {
    const key = parseIdempotencyKey(header);
    return key === undefined ? undefined : { scope, key };
  }

  /**
   * Runs `enqueue` once per key and resolves with what the first request with the key recorded (a job
   * id, or a batch's entries as JSON): `enqueue`'s own result, or the record's on a retry. The claim
   * names the job id to enqueue under: the same for every request that may run it, so a takeover
   * after a crash adds the same job, not a second one. Throws IDEMPOTENCY_KEY_CONFLICT when
   * `request` differs from the first one's.
   */
  async once({ scope, key }: IdempotencyKey, request: readonly string[], enqueue: (claim: Claim) => Promise<string>): Promise<string> {
    const fingerprint = requestFingerprint(request);
    const recordKey = this.keys.idempotency(recordDigest(scope, key));
    const owner = randomUUID();
    const planned = randomUUID();
    let pause = POLL_MS.first;
    for (;;) {
      const record = await this.store.claim(recordKey, { fp: fingerprint, planned, owner }, this.config.idempotencyTtlSeconds, LEASE_MS);
      if (record.fp !== fingerprint) {
        throw new ApiError(
          'IDEMPOTENCY_KEY_CONFLICT',
          `Idempotency-Key "${key}" was first used for a different request (another body, job type or route); a new request needs a new key`,
        );
      }
      if (record.result !== undefined) return record.result;
      if (record.owner === owner) {
        let adding = false;
        const claim: Claim = { plannedId: record.planned, takeover: record.planned !== planned, adding: () => (adding = true) };
        const result = await enqueue(claim).catch(async (error: unknown) => {
          // Nothing enqueued: a retry may start afresh. If the release fails too, the lease expires.
          if (!adding) await this.store.release(recordKey, owner).catch(() => undefined);
          throw error;
        });
        // why a failed settle is not the caller's error: the jobs are queued; a retry finds the record
        // pending, takes it over after the lease and enqueues the same planned ids, which joins them.
        const settled = await this.store.settle(recordKey, result).catch(() => undefined);
        return settled?.result ?? result;
      }
      // Another request (on any replica) is enqueueing under this key right now: wait for its result.
      if (this.lifecycle.shuttingDown) throw new ApiError('SHUTTING_DOWN', 'This replica is shutting down', { retryAfterSeconds: 1 });
      await sleep(pause);
      pause = Math.min(pause * 2, POLL_MS.max);
    }
  }
}
