import { Redis } from 'ioredis';
import { RateLimiter } from '../apps/api/src/security/rate-limiter';
import { RedisServer } from './support/redis';

/**
 * The GCRA budget on a Redis of the test's own, where a right API key's look (secondsUntilRoom, a
 * PTTL) must agree with what the script takes: room while a try is left, none once the burst is spent.
 */
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
  it.each([16, 7])('at %i a minute: room until the burst is spent, then the seconds until the next one fits', async (perMinute) => {
    const limiter = new RateLimiter(redis, (client) => `rl-${perMinute}:${client}`, perMinute, perMinute);
    const intervalS = 60 / perMinute;
    // Untouched: no key at all.
    await expect(limiter.secondsUntilRoom('a')).resolves.toBe(0);
    // One try left: a right key still gets in, and the try is there to take.
    expect((await limiter.takeUpTo('a', perMinute - 1)).granted).toBe(perMinute - 1);
    await expect(limiter.secondsUntilRoom('a')).resolves.toBe(0);
    expect((await limiter.takeUpTo('a', 1)).granted).toBe(1);
    // Spent: refused until one interval has passed, as the script's own answer says (a second
    // less if this host stalled past a whole second since the take).
    const wait = await limiter.secondsUntilRoom('a');
    const refused = await limiter.takeUpTo('a', 1);
    expect(refused.granted).toBe(0);
    expect([Math.ceil(intervalS) - 1, Math.ceil(intervalS)]).toContain(wait);
    expect([wait - 1, wait]).toContain(refused.retryAfterSeconds);
    expect(wait).toBeGreaterThanOrEqual(1);
    // Other clients keep their own budget.
    await expect(limiter.secondsUntilRoom('b')).resolves.toBe(0);
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
    await expect(limiter.secondsUntilRoom('a')).resolves.toBe(1);
    // One a second: one fits again a second after the burst was spent.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await expect(limiter.secondsUntilRoom('a')).resolves.toBe(0);
    expect((await limiter.takeUpTo('a', 1)).granted).toBe(1);
  });
});
