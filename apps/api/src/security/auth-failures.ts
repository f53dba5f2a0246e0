import type { RedisClient } from '@app/redis';
import { queueKeys } from '@app/queue';
import { ApiError } from '../http/api-error';
import type { KeyHolder } from './api-keys';
import { hashedAddress } from './client-address';
import { RateLimiter } from './rate-limiter';

/** Wrong keys a client address may present per minute, all replicas together; also its burst. */
export const AUTH_FAILURES_PER_MINUTE = 16;

/** What presenting a key got: its holder, a wrong key (401), or an address out of tries (429). */
export type KeyAttempt = { holder: KeyHolder } | { wrong: true } | { retryAfterSeconds: number };

/** The 429 of an address out of tries: the same for a right and a wrong key. */
export const tooManyFailures = (retryAfterSeconds: number): ApiError =>
  new ApiError('RATE_LIMITED', 'Too many wrong keys from this address; every key from it is refused for now', { retryAfterSeconds });

/**
 * The price of guessing keys: each wrong key takes one of its address's AUTH_FAILURES_PER_MINUTE (a
 * GCRA bucket in Redis shared by every replica; an IPv6 address counts by its /64). Once the bucket is
 * empty every key from that address, right or wrong, gets 429 until it refills, so guessing past it
 * learns nothing; a right key takes nothing from it.
 */
export class AuthFailures {
  private readonly limiter: RateLimiter;

  constructor(redis: RedisClient, prefix: string) {
    this.limiter = new RateLimiter(redis, queueKeys(prefix).authFailures, AUTH_FAILURES_PER_MINUTE, AUTH_FAILURES_PER_MINUTE);
  }

  /**
   * The outcome of a key sent from `address` whose holder (undefined: a wrong key) is known. why a
   * wrong key is answered only once its failure is taken, atomically: concurrent guesses cannot all be
   * checked before the first is counted. A Redis error is thrown (503): answering without counting
   * would let guessing through for free.
   */
  async check(holder: KeyHolder | undefined, address: string): Promise<KeyAttempt> {
    const bucket = hashedAddress(address);
    if (holder) {
      const wait = await this.limiter.secondsUntilRoom(bucket);
      return wait > 0 ? { retryAfterSeconds: wait } : { holder };
    }
    const { granted, retryAfterSeconds } = await this.limiter.takeUpTo(bucket, 1);
    return granted > 0 ? { wrong: true } : { retryAfterSeconds };
  }
}
