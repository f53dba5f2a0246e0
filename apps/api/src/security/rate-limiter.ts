import type { RedisClient } from '@app/redis';

/**
 * GCRA (a token bucket kept as one timestamp per client) in one atomic Lua call, on Redis time, so
 * every API replica shares the same budget. Returns {allowed, retryAfterMs}.
 */
const GCRA = `
local now_parts = redis.call('TIME')
local now = tonumber(now_parts[1]) * 1000 + math.floor(tonumber(now_parts[2]) / 1000)
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local next_tat = tat + interval
local allow_at = next_tat - tolerance - interval
if allow_at > now then
  return {0, allow_at - now}
end
redis.call('SET', KEYS[1], next_tat, 'PX', math.ceil(next_tat - now) + 1000)
return {1, 0}
`;

export interface RateDecision {
  allowed: boolean;
  retryAfterSeconds: number;
}

export class RateLimiter {
  private readonly intervalMs: number;
  private readonly toleranceMs: number;

  /** `perMinute` requests per minute on average; up to `burst` of them at once. */
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    perMinute: number,
    burst: number,
  ) {
    this.intervalMs = 60_000 / perMinute;
    this.toleranceMs = this.intervalMs * (burst - 1);
  }

  async take(client: string): Promise<RateDecision> {
    const [allowed, waitMs] = (await this.redis.eval(GCRA, 1, `${this.prefix}:ratelimit:${client}`, this.intervalMs, this.toleranceMs)) as [
      number,
      number,
    ];
    return { allowed: allowed === 1, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) };
  }
}
