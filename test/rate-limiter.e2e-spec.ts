import { Redis } from 'ioredis';
import { RateLimiter } from '../apps/api/src/security/rate-limiter';
import { RedisServer } from './support/redis';

/** The GCRA budget on a Redis of the test's own: a whole burst, then refusals that say how long to wait. */
describe('rate limiter', () => {
  let server: RedisServer;
  let redis: Redis;
  beforeAll(async () => {
    server = await RedisServer.start();
    redis = new Redis(server.url);
  });
  afterAll(async () => {
    await redis?.quit();
    await server?.stop();
  });

  // 16 a minute as AuthFailures has it (3750 ms apart), and 7 a minute (8571.4 ms: a TAT with a fraction).
  it.each([16, 7])('at %i a minute: the whole burst, then refused with the seconds until the next one fits', async (perMinute) => {
    const limiter = new RateLimiter(redis, (client) => `rl-${perMinute}:${client}`, perMinute, perMinute);
    const intervalS = 60 / perMinute;
    expect((await limiter.takeUpTo('a', perMinute - 1)).granted).toBe(perMinute - 1);
    expect((await limiter.takeUpTo('a', 1)).granted).toBe(1);
    // Spent: refused for one interval (a second less if this host stalled past a whole second since the take).
    const refused = await limiter.takeUpTo('a', 1);
    expect(refused.granted).toBe(0);
    expect([Math.ceil(intervalS) - 1, Math.ceil(intervalS)]).toContain(refused.retryAfterSeconds);
    expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    // Other clients keep their own budget.
    expect((await limiter.takeUpTo('b', 1)).granted).toBe(1);
  });

  it('gives a whole burst at a fractional interval, however fast its tries come', async () => {
    // 7 a minute: a fractional TAT, which the script once rounded up and so refused the last try of
    // a burst taken within the same millisecond, most of the time.
    for (let i = 0; i < 20; i++) {
      const limiter = new RateLimiter(redis, (client) => `rl-burst-${i}:${client}`, 7, 7);
      expect((await limiter.takeUpTo('a', 6)).granted).toBe(6);
      expect((await limiter.takeUpTo('a', 1)).granted).toBe(1);
      expect((await limiter.takeUpTo('a', 1)).granted).toBe(0);
    }
  });

  it('has room again once the spent budget has refilled by one', async () => {
    const limiter = new RateLimiter(redis, (client) => `rl-fast:${client}`, 60, 2);
    expect((await limiter.takeUpTo('a', 2)).granted).toBe(2);
    expect(await limiter.takeUpTo('a', 1)).toEqual({ granted: 0, retryAfterSeconds: 1 });
    // One a second: one fits again a second after the burst was spent.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect((await limiter.takeUpTo('a', 1)).granted).toBe(1);
  });
});
