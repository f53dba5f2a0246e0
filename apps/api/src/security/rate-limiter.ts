import { LuaScript, type RedisClient } from '@app/redis';

/**
 * GCRA (a token bucket kept as one timestamp per client) in one atomic Lua call, on Redis time, so
 * every API replica shares the same budget. Takes up to ARGV[3] requests at once (a batch counts
 * its items) and returns {taken, waitMs}: how many it took, and when the next one would fit. The
 * key lives until 1 s past the TAT it holds. why the TAT is written with `%.3f` and compared
 * with 1 µs to spare: a fractional interval (7 a minute) makes a fractional TAT, which Lua's own
 * number-to-string keeps to 14 digits (0.1 ms at today's epoch), and rounding up cost the last try
 * of a burst taken within the same millisecond (264 of 300 times in test/rate-limiter.e2e-spec.ts).
 */
const GCRA = new LuaScript(`
local now_parts = redis.call('TIME')
local now = tonumber(now_parts[1]) * 1000 + math.floor(tonumber(now_parts[2]) / 1000)
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local wanted = tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local fit = math.floor((now + tolerance + interval - tat + 0.001) / interval)
local taken = math.max(0, math.min(wanted, fit))
if taken == 0 then
  return {0, math.ceil(tat - tolerance - now)}
end
local next_tat = tat + taken * interval
redis.call('SET', KEYS[1], string.format('%.3f', next_tat), 'PX', math.ceil(next_tat - now) + 1000)
return {taken, math.max(0, math.ceil(next_tat - tolerance - now))}
`, 1);

export interface RateGrant {
  /** How many of the requests asked for fit in the budget now. */
  granted: number;
  /** When the next one would (at least 1 s, for Retry-After). */
  retryAfterSeconds: number;
}

export class RateLimiter {
  private readonly intervalMs: number;
  private readonly toleranceMs: number;

  /** `perMinute` requests per minute on average; up to `burst` of them at once; `keyOf` names a client's state. */
  constructor(
    private readonly redis: RedisClient,
    private readonly keyOf: (client: string) => string,
    perMinute: number,
    burst: number,
  ) {
    this.intervalMs = 60_000 / perMinute;
    this.toleranceMs = this.intervalMs * (burst - 1);
  }

  /** Takes up to `wanted` requests from `client`'s budget at once, as many as fit. */
  async takeUpTo(client: string, wanted: number): Promise<RateGrant> {
    const [granted, waitMs] = await this.run(client, wanted);
    return { granted, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) };
  }

  private async run(client: string, wanted: number): Promise<[number, number]> {
    return (await GCRA.run(this.redis, this.keyOf(client), this.intervalMs, this.toleranceMs, wanted)) as [number, number];
  }
}
