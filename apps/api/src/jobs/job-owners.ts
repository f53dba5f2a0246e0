import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '@app/config';
import { JobRegistry } from '@app/jobs';
import { jobTagsKey, listingEndsKey, listingKey, listUntil, ownersKey, SCHEDULED_JOB_ID, SWEEP_GRACE_SECONDS } from '@app/queue';
import { LuaScript, type RedisClient } from '@app/redis';
import { QUEUE_REDIS, SUBMIT_REDIS } from '../queues/queue.providers';
import { ANONYMOUS } from '../security/caller';

/**
 * How long an owner set lives before its job finishes. why so long: a job may wait in a backlog for
 * a long time, and its owners must outlive the wait; when the job ends, the worker shortens it to
 * as long as the job or its cached result stays readable (see ownersOutlive in the worker's JobProcessor).
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
 * and no owner is recorded. The ticks of declared schedules belong to the service, not to a caller:
 * every key sees them, as it sees GET /v1/schedules.
 *
 * The same relation the other way round is the listing index (libs/queue/src/job-index.ts): each
 * caller's jobs, by when it got them, and by the tags it gave them (`Job-Tags`), written here in the
 * same write as the owners, with or without keys; with JOB_LISTING=off none of it is written (`listing`).
 */
@Injectable()
export class JobOwners {
  readonly enabled: boolean;
  /** The listing index is kept (JOB_LISTING, on by default). */
  readonly listing: boolean;
  private readonly prefix: string;
  private readonly queues: readonly string[];
  /** Caller and finished job, recorded by this replica, until when the record surely stays (oldest first). */
  private readonly recorded = new Map<string, number>();

  constructor(
    @Inject(QUEUE_REDIS) private readonly redis: RedisClient,
    /** why the submissions' connection for the writes: the WAIT after an add covers them (REDIS_MIN_REPLICAS_ACK). */
    @Inject(SUBMIT_REDIS) private readonly writer: RedisClient,
    @Inject(CONFIG) config: Config,
    registry: JobRegistry,
  ) {
    this.enabled = config.apiKeys.length > 0;
    this.listing = config.jobListing !== 'off';
    this.prefix = config.redisPrefix;
    this.queues = registry.queues();
  }

  /**
   * Records `scope` as an owner of each of `ids` of `queue` (jobs it added or joined) and of the
   * finished jobs whose cached results it got (`hits`, jobs of the same type, so of `queue` too).
   *
   * A hit this replica has recorded for `scope` before is not written again: a finished job's owner
   * set only grows (DELETE refuses a finished job, so nobody withdraws) and lives at least as long
   * as its cached result (the worker gives it the longer of JOB_RETENTION_SECONDS and the cache
   * TTL), so a caller that repeats a submission costs no write after its first.
   */
  async add(queue: string, ids: readonly string[], scope: string, hits: readonly CacheHit[] = [], tags: readonly string[] = []): Promise<void> {
    const now = Date.now();
    const unrecorded = hits.filter((hit) => !((this.recorded.get(recordKey(scope, hit.id)) ?? 0) > now));
    if (ids.length === 0 && unrecorded.length === 0) return;
    const ends = listingEndsKey(this.prefix, queue);
    const listing = this.listing;
    await Promise.all([
      ...[...unrecorded.map((hit) => hit.id), ...ids].flatMap((id) => {
        const key = ownersKey(this.prefix, queue, id);
        // why NX: a set that already has a lifetime (a finished job's) keeps it.
        const owner = this.enabled ? [this.writer.sadd(key, scope), this.writer.expire(key, OWNERS_IN_FLIGHT_SECONDS, 'NX')] : [];
        return listing ? [...owner, ...this.list(queue, id, scope, now, tags)] : owner;
      }),
      // A job in flight leaves the listing when it ends (see listUntil); NX: a finished one already has its end.
      ...(listing ? ids : []).map((id) => this.writer.zadd(ends, 'NX', now + OWNERS_IN_FLIGHT_SECONDS * 1000, id)),
      // A cached result's job stays readable as long as the result.
      ...(listing ? unrecorded : []).map((hit) => this.writer.zadd(ends, ...(hit.expiresAt === undefined ? (['NX', now + OWNERS_IN_FLIGHT_SECONDS * 1000] as const) : (['GT', hit.expiresAt] as const)), hit.id)),
    ]);
    for (const { id, expiresAt } of unrecorded) {
      if (expiresAt === undefined) continue;
      const key = recordKey(scope, id);
      this.recorded.delete(key);
      // why capped: a set this write created has the in-flight lifetime, which a long cache TTL may exceed.
      this.recorded.set(key, Math.min(expiresAt, now + OWNERS_IN_FLIGHT_SECONDS * 1000));
      if (this.recorded.size > RECORDED_MAX) this.recorded.delete(this.recorded.keys().next().value!);
    }
  }

  /** The listing entries of job `id` of `queue` for `scope`, got `now` with `tags` (see job-index.ts). */
  private list(queue: string, id: string, scope: string, now: number, tags: readonly string[]): Array<Promise<unknown>> {
    const writes = [this.writer.zadd(listingKey(this.prefix, queue, this.listed(scope)), now, id)];
    // why only with keys: without, the one scope's index is every caller's already.
    if (this.enabled) writes.push(this.writer.zadd(listingKey(this.prefix, queue), now, id));
    if (tags.length > 0) {
      const key = jobTagsKey(this.prefix, queue, id);
      for (const tag of tags) writes.push(this.writer.zadd(listingKey(this.prefix, queue, this.listed(scope), tag), now, id));
      writes.push(this.writer.hset(key, this.listed(scope), tags.join(',')), this.writer.expire(key, OWNERS_IN_FLIGHT_SECONDS + SWEEP_GRACE_SECONDS, 'NX'));
    }
    return writes;
  }

  /** The scope a caller's jobs are listed under: its own with API keys, the one shared scope without. */
  listed(scope: string): string {
    return this.enabled ? scope : ANONYMOUS.scope;
  }

  /** The tags `scope` gave job `id` (any queue), or undefined: none. */
  async tagsOf(id: string, scope: string): Promise<string[] | undefined> {
    if (!this.listing || SCHEDULED_JOB_ID.test(id)) return undefined;
    const found = await Promise.all(this.queues.map((queue) => this.redis.hget(jobTagsKey(this.prefix, queue, id), this.listed(scope))));
    const tags = found.find((text) => text !== null);
    return tags ? tags.split(',') : undefined;
  }

  /**
   * Deletes the owner sets and listing entries of `ids` of `queue`, planned by `scope` with `tags`
   * for jobs that were never added (the submission joined another).
   */
  async forget(queue: string, ids: readonly string[], scope: string, tags: readonly string[] = []): Promise<void> {
    if (ids.length === 0) return;
    const listed = this.listed(scope);
    const owners = this.enabled ? [this.writer.del(...ids.map((id) => ownersKey(this.prefix, queue, id)))] : [];
    if (!this.listing) {
      await Promise.all(owners);
      return;
    }
    await Promise.all([
      ...owners,
      ...(this.enabled ? [this.writer.zrem(listingKey(this.prefix, queue), ...ids)] : []),
      this.writer.zrem(listingKey(this.prefix, queue, listed), ...ids),
      this.writer.zrem(listingEndsKey(this.prefix, queue), ...ids),
      ...tags.map((tag) => this.writer.zrem(listingKey(this.prefix, queue, listed, tag), ...ids)),
      ...(tags.length > 0 ? [this.writer.del(...ids.map((id) => jobTagsKey(this.prefix, queue, id)))] : []),
    ]);
  }

  /**
   * True when `scope` may see job `id` (always, without API keys). why every queue's set at once
   * when the caller does not know the job's queue: one round trip either way, and with one queue
   * (the common case) one command.
   */
  async owns(id: string, scope: string): Promise<boolean> {
    if (!this.enabled || SCHEDULED_JOB_ID.test(id)) return true;
    const found = await Promise.all(this.queues.map((queue) => this.redis.sismember(ownersKey(this.prefix, queue, id), scope)));
    return found.includes(1);
  }

  /**
   * Withdraws `scope`'s interest in job `id` of `queue` unless it is the last owner; resolves with
   * how many others remain. A caller that withdrew no longer finds the job in its listing.
   */
  async withdraw(queue: string, id: string, scope: string): Promise<number> {
    if (!this.enabled || SCHEDULED_JOB_ID.test(id)) return 0;
    const others = (await WITHDRAW.run(this.redis, ownersKey(this.prefix, queue, id), scope)) as number;
    if (others > 0 && this.listing) {
      const tags = await this.redis.hget(jobTagsKey(this.prefix, queue, id), scope);
      const keys = [listingKey(this.prefix, queue, scope), ...(tags ? tags.split(',').map((tag) => listingKey(this.prefix, queue, scope, tag)) : [])];
      await Promise.all([...keys.map((key) => this.redis.zrem(key, id)), this.redis.hdel(jobTagsKey(this.prefix, queue, id), scope)]);
    }
    return others;
  }

  /**
   * Job `id` of `queue` ended while queued (cancelled, expired): its owners get the lifetime of its
   * view, `seconds`, and the listing forgets it then. why the grace: the sweep that forgets it reads them.
   */
  async finished(queue: string, id: string, seconds: number): Promise<void> {
    await Promise.all([
      ...(this.enabled ? [this.redis.expire(ownersKey(this.prefix, queue, id), seconds + SWEEP_GRACE_SECONDS)] : []),
      ...(this.listing ? [listUntil(this.redis, this.prefix, queue, id, Date.now() + seconds * 1000)] : []),
    ]);
  }
}

const recordKey = (scope: string, id: string) => `${scope}\n${id}`;
