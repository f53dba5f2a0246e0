import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '@app/config';
import { park, type ParkedJob, parkedOf } from '@app/queue';
import type { RedisClient } from '@app/redis';
import { QUEUE_REDIS } from '../queues/queue.providers';
import { keyNameOf } from '../security/caller';
import type { CallerShares as Hook } from '../jobs/submit-hooks';
import { type CallerLimits, limitsOf } from './caller-limits';

/**
 * Fair share on submission: each API key's jobs wait in its own share of the queue and are released
 * in turn (see libs/queue's fair-share.ts, which the worker follows too). Without API keys there is
 * one caller (the anonymous scope), whose jobs go to the queue as they are; so do the jobs of the one
 * key of API_KEYS when it is the only one and no per-key limit is set (nobody to be fair to, nothing
 * to enforce: a share would cost every job its park and release for nothing).
 */
@Injectable()
export class CallerShares implements Hook {
  private readonly shared: boolean;
  /** Each key's limits, read from the config once: every submission needs its caller's. */
  private readonly limits = new Map<string, CallerLimits>();

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    @Inject(QUEUE_REDIS) private readonly redis: RedisClient,
  ) {
    this.shared = config.apiKeys.length > 1 || config.callerConcurrency > 0 || config.callerMaxQueued > 0 || config.callerLimits.length > 0;
  }

  private limitsOf(caller: string): CallerLimits {
    let limits = this.limits.get(caller);
    if (!limits) this.limits.set(caller, (limits = limitsOf(this.config, caller)));
    return limits;
  }

  /** Whether API keys' jobs go into their shares: keys set, and two or more of them or a per-key limit. */
  get engaged(): boolean {
    return this.shared && this.config.apiKeys.length > 0;
  }

  callerOf(scope: string): string | undefined {
    return this.shared ? keyNameOf(scope) : undefined;
  }

  async queued(queue: string, caller: string): Promise<{ queued: number; max: number }> {
    const max = this.limitsOf(caller).queued;
    // why no read without a limit: it would cost a round trip on every submission for nothing.
    return { queued: max === 0 ? 0 : await parkedOf(this.redis, this.config.redisPrefix, queue, caller), max };
  }

  park(connection: RedisClient, queue: string, caller: string, jobs: readonly ParkedJob[]): Promise<number> {
    return park(connection, this.config.redisPrefix, queue, caller, this.limitsOf(caller).concurrency, jobs);
  }
}
