import type { Config } from '@app/config';
import type { RedisClient } from '@app/redis';
import { CallerShares } from './caller-shares';

describe('CallerShares.callerOf', () => {
  const key = (name: string) => ({ name, key: `${name}-secret` });
  const shares = (config: Partial<Config>) =>
    new CallerShares({ apiKeys: [key('alice')], callerConcurrency: 0, callerMaxQueued: 0, callerLimits: [], ...config } as unknown as Config, {} as RedisClient);

  it("gives each key its share once there are two keys, or a per-key limit to enforce", () => {
    expect(shares({ apiKeys: [key('alice'), key('bob')] }).callerOf('key:alice')).toBe('alice');
    expect(shares({ callerConcurrency: 2 }).callerOf('key:alice')).toBe('alice');
    expect(shares({ callerMaxQueued: 10 }).callerOf('key:alice')).toBe('alice');
    expect(shares({ callerLimits: [{ name: 'alice', limit: 'concurrency', value: 1 }] }).callerOf('key:alice')).toBe('alice');
  });

  it('leaves the jobs of a single key without limits, and of an open API, to the queue as they are', () => {
    expect(shares({}).callerOf('key:alice')).toBeUndefined();
    expect(shares({ apiKeys: [key('alice'), key('bob')] }).callerOf('anonymous')).toBeUndefined();
  });

  it('says it is engaged (GET /admin/callers) exactly when keys get their shares', () => {
    expect(shares({ apiKeys: [key('alice'), key('bob')] }).engaged).toBe(true);
    expect(shares({ callerConcurrency: 2 }).engaged).toBe(true);
    expect(shares({}).engaged).toBe(false);
    expect(shares({ apiKeys: [], callerConcurrency: 2 }).engaged).toBe(false);
  });
});
