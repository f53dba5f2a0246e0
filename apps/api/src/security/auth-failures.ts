import type { RedisClient } from '@app/redis';
import { queueKeys } from '@app/queue';
import { ApiError } from '../http/api-error';
import { hashedAddress } from './client-address';
import { RateLimiter } from './rate-limiter';

/** Wrong keys a client address may present per minute, all replicas together; also its burst. */
export const AUTH_FAILURES_PER_MINUTE = 16;
/** The most locked-out addresses a replica remembers at once (a few hundred kilobytes). */
const REMEMBERED_LOCKOUTS = 10_000;

/** What a wrong key got: a 401 while its address has tries left, a 429 once it has none. */
export type WrongKey = { wrong: true } | { retryAfterSeconds: number };

/** The 429 of an address out of tries. Right keys from it are still served. */
export const tooManyFailures = (retryAfterSeconds: number): ApiError =>
  new ApiError('RATE_LIMITED', 'Too many wrong keys from this address; wrong keys from it are refused for now', { retryAfterSeconds });

/**
 * The price of guessing keys: each wrong key takes one of its address's AUTH_FAILURES_PER_MINUTE (a
 * GCRA bucket in Redis shared by every replica; an IPv6 address counts by its /64); once the bucket
 * is empty, wrong keys from it get 429 until it refills.
 *
 * why right keys never look at the bucket: anyone behind a shared address (an office, a NAT, a
 * proxy) can empty it without a key, and a right key refused then is a lockout aimed at its owner.
 * A key has 128 bits at least (key-strength.ts refuses fewer), so being told "right" is no help to a
 * guesser: what makes guessing hopeless is the key's size, and the bucket bounds what guessing costs
 * (Redis, logs) and makes it loud. It also means a right key costs no Redis round trip here.
 */
export class AuthFailures {
  private readonly limiter: RateLimiter;
  /** Locked-out address digests, with when (Date.now()) this replica next asks Redis about them. */
  private readonly lockedOut = new Map<string, number>();

  constructor(redis: RedisClient, prefix: string) {
    this.limiter = new RateLimiter(redis, queueKeys(prefix).authFailures, AUTH_FAILURES_PER_MINUTE, AUTH_FAILURES_PER_MINUTE);
  }

  /**
   * Counts a wrong key sent from `address`. why counted before it is answered, atomically:
   * concurrent guesses cannot all be checked before the first is counted. why a lockout is
   * remembered here: a flood from a locked-out address costs Redis nothing more until the bucket has
   * room again. A Redis error is thrown (503): answering without counting would let guessing through
   * for free.
   */
  async wrongKey(address: string): Promise<WrongKey> {
    const bucket = hashedAddress(address);
    const until = this.lockedOut.get(bucket);
    const now = Date.now();
    if (until !== undefined && until > now) return { retryAfterSeconds: Math.max(1, Math.ceil((until - now) / 1000)) };
    this.lockedOut.delete(bucket);
    const { granted, retryAfterSeconds } = await this.limiter.takeUpTo(bucket, 1);
    if (granted > 0) return { wrong: true };
    this.remember(bucket, now + retryAfterSeconds * 1000);
    return { retryAfterSeconds };
  }

  private remember(bucket: string, until: number): void {
    if (this.lockedOut.size >= REMEMBERED_LOCKOUTS) {
      const now = Date.now();
      for (const [key, at] of this.lockedOut) if (at <= now) this.lockedOut.delete(key);
      // Still full: this one is asked about in Redis each time, as before.
      if (this.lockedOut.size >= REMEMBERED_LOCKOUTS) return;
    }
    this.lockedOut.set(bucket, until);
  }
}
