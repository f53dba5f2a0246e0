import { HEAL_INTERVAL_MS } from '@app/queue';
import type { RedisClient } from '@app/redis';
import { FairRelease } from './fair-release';

/**
 * A connection to a Redis that does not answer (frozen, or being failed over) until the test says:
 * it counts the scripts sent and holds their replies. Only the timer is under test here; what the
 * heal does in Redis is test/tenancy.e2e-spec.ts's.
 */
function frozenRedis() {
  const held: Array<(reply: unknown) => void> = [];
  const redis = { evalsha: () => new Promise((resolve) => held.push(resolve)) } as unknown as RedisClient;
  return { redis, held };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('FairRelease', () => {
  beforeEach(() => jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask', 'setImmediate'] }));
  afterEach(() => jest.useRealTimers());

  it('heals at start and every interval, never two at once: the ticks while one waits on Redis are skipped', async () => {
    const { redis, held } = frozenRedis();
    const release = new FairRelease(redis, 'p', 'q', () => undefined);
    try {
      expect(held).toHaveLength(1);
      jest.advanceTimersByTime(10 * HEAL_INTERVAL_MS);
      expect(held).toHaveLength(1);
      held[0]([0, 0]);
      await settle();
      jest.advanceTimersByTime(HEAL_INTERVAL_MS);
      expect(held).toHaveLength(2);
    } finally {
      release.stop();
    }
  });
});
