import { limitsOf } from './caller-limits';

describe('limitsOf', () => {
  const config = {
    callerConcurrency: 4,
    callerMaxQueued: 100,
    callerLimits: [
      { name: 'alice', limit: 'concurrency' as const, value: 1 },
      { name: 'bob', limit: 'queued' as const, value: 0 },
    ],
  };

  it("takes a key's own entries over the defaults, one limit at a time", () => {
    expect(limitsOf(config, 'alice')).toEqual({ concurrency: 1, queued: 100 });
    expect(limitsOf(config, 'bob')).toEqual({ concurrency: 4, queued: 0 });
    expect(limitsOf(config, 'carol')).toEqual({ concurrency: 4, queued: 100 });
  });
});
