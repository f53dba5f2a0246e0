import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '@app/config';
import { queueKeys, SCHEDULED_JOB_ID } from '@app/queue';
import { LuaScript, type RedisClient } from '@app/redis';
import { QUEUE_REDIS } from '../queues/queue.providers';

/**
 * How long an owner set lives before its job finishes. why so long: a job may wait in a backlog for
 * a long time, and its owners must outlive the wait; when the job ends, the worker shortens it to
 * as long as the job or its cached result stays readable (see OWNERS_AFTER_FINISH in the worker).
 */
const OWNERS_IN_FLIGHT_SECONDS = 7 * 24 * 3600;

/** How many (caller, finished job) pairs a replica remembers having recorded (see JobOwners.add). */
const RECORDED_MAX = 10_000;

/** A cached result a caller got: the finished job it came from, and when the entry expires. */
export interface CacheHit {
  id: string;
  expiresAt?: number;
}

/**
 * Removes one owner, unless it is the last one, and answers how many others remain (0: it is the
 * last, and stays, to cancel the job and read the cancelled view). Atomic, so of owners leaving at
 * once exactly one finds itself the last.
 */
const WITHDRAW = new LuaScript(`local n = redis.call('SCARD', KEYS[1])
if n > 1 and redis.call('SREM', KEYS[1], ARGV[1]) == 1 then return n - 1 end
return 0`, 1);

/**
 * Who may see a job: every caller (API key) that submitted it or joined it, by single flight, a
 * cache hit or an Idempotency-Key retry. With API keys configured, GET, the event stream and DELETE
 * answer 404 to anyone else, as if the job did not exist. Without keys there is one trust domain
 * and nothing is recorded. The ticks of declared schedules belong to the service, not to a caller:
 * every key sees them, as it sees GET /v1/schedules.
 */
@Injectable()
export class JobOwners {
  readonly enabled: boolean;
  private readonly keys: ReturnType<typeof queueKeys>;
  /** Caller and finished job, recorded by this replica, until when the record surely stays (oldest first). */
  private readonly recorded = new Map<string, number>();

  constructor(
    @Inject(QUEUE_REDIS) private readonly redis: RedisClient,
    @Inject(CONFIG) config: Config,
  ) {
    this.enabled = config.apiKeys.length > 0;
    this.keys = queueKeys(config.redisPrefix);
  }

  /**
   * Records `scope` as an owner of each of `ids` (jobs it added or joined) and of the finished jobs
   * whose cached results it got (`hits`). why one round trip and no MULTI: on Redis Cluster the sets
   * of a batch live on many slots; the commands go out together and are answered together.
   *
   * A hit this replica has recorded for `scope` before is not written again: a finished job's owner
   * set only grows (DELETE refuses a finished job, so nobody withdraws) and lives at least as long
   * as its cached result (the worker gives it the longer of JOB_RETENTION_SECONDS and the cache
   * TTL), so a caller that repeats a submission costs no write after its first.
   */
  async add(ids: readonly string[], scope: string, hits: readonly CacheHit[] = []): Promise<void> {
    if (!this.enabled) return;
    const now = Date.now();
    const unrecorded = hits.filter((hit) => !((this.recorded.get(recordKey(scope, hit.id)) ?? 0) > now));
    if (ids.length === 0 && unrecorded.length === 0) return;
    await Promise.all(
      [...unrecorded.map((hit) => hit.id), ...ids].flatMap((id) => {
        const key = this.keys.owners(id);
        // why NX: a set that already has a lifetime (a finished job's) keeps it.
        return [this.redis.sadd(key, scope), this.redis.expire(key, OWNERS_IN_FLIGHT_SECONDS, 'NX')];
      }),
    );
    for (const { id, expiresAt } of unrecorded) {
      if (expiresAt === undefined) continue;
      const key = recordKey(scope, id);
      this.recorded.delete(key);
      // why capped: a set this write created has the in-flight lifetime, which a long cache TTL may exceed.
      this.recorded.set(key, Math.min(expiresAt, now + OWNERS_IN_FLIGHT_SECONDS * 1000));
      if (this.recorded.size > RECORDED_MAX) this.recorded.delete(this.recorded.keys().next().value!);
    }
  }

  /** Deletes the owner sets of `ids`, planned for jobs that were never added (the submission joined another). */
  async forget(ids: readonly string[]): Promise<void> {
    if (!this.enabled) return;
    // why one DEL per set: on Redis Cluster they live on different slots.
    await Promise.all(ids.map((id) => this.redis.del(this.keys.owners(id))));
  }

  /** True when `scope` may see job `id` (always, without API keys). */
  async owns(id: string, scope: string): Promise<boolean> {
    if (!this.enabled || SCHEDULED_JOB_ID.test(id)) return true;
    return (await this.redis.sismember(this.keys.owners(id), scope)) === 1;
  }

  /** Withdraws `scope`'s interest in job `id` unless it is the last owner; resolves with how many others remain. */
  async withdraw(id: string, scope: string): Promise<number> {
    if (!this.enabled || SCHEDULED_JOB_ID.test(id)) return 0;
    return (await WITHDRAW.run(this.redis, this.keys.owners(id), scope)) as number;
  }

  /** Gives job `id`'s owners the lifetime of its cancelled view (a job cancelled while queued). */
  async finished(id: string, seconds: number): Promise<void> {
    if (this.enabled) await this.redis.expire(this.keys.owners(id), seconds);
  }
}

const recordKey = (scope: string, id: string) => `${scope}\n${id}`;
