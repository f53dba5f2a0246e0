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

  constructor(
    @Inject(QUEUE_REDIS) private readonly redis: RedisClient,
    @Inject(CONFIG) config: Config,
  ) {
    this.enabled = config.apiKeys.length > 0;
    this.keys = queueKeys(config.redisPrefix);
  }

  /**
   * Records `scope` as an owner of each of `ids`. why one round trip and no MULTI: on Redis Cluster
   * the sets of a batch live on many slots; the commands go out together and are answered together.
   */
  async add(ids: readonly string[], scope: string): Promise<void> {
    if (!this.enabled || ids.length === 0) return;
    await Promise.all(
      ids.flatMap((id) => {
        const key = this.keys.owners(id);
        // why NX: a set that already has a lifetime (a finished job's) keeps it.
        return [this.redis.sadd(key, scope), this.redis.expire(key, OWNERS_IN_FLIGHT_SECONDS, 'NX')];
      }),
    );
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
