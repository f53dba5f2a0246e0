import { ConfigError, loadConfig } from './config';

describe('loadConfig', () => {
  it('applies documented defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      redisUrl: 'redis://127.0.0.1:6379',
      cacheRedisUrl: 'redis://127.0.0.1:6379',
      port: 3000,
      workerPort: 3001,
      bodyLimit: 5 * 1024 * 1024,
      logLevel: 'info',
      chaosJobs: false,
      idempotencyTtlSeconds: 86_400,
      batchMaxItems: 1000,
    });
    expect(config.workerThreads).toBeGreaterThanOrEqual(1);
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('reads sizes with units and keeps CACHE_REDIS_URL separate when given', () => {
    const config = loadConfig({ BODY_LIMIT: '512kb', CACHE_REDIS_URL: 'rediss://:secret@cache:6380/2', PORT: '8080' });
    expect(config.bodyLimit).toBe(512 * 1024);
    expect(config.cacheRedisUrl).toBe('rediss://:secret@cache:6380/2');
    expect(config.port).toBe(8080);
  });

  it('treats an empty variable as unset', () => {
    expect(loadConfig({ PORT: '' }).port).toBe(3000);
  });

  it.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['WORKER_THREADS', '0'],
    ['REDIS_URL', 'http://localhost'],
    ['BODY_LIMIT', 'lots'],
    ['LOG_LEVEL', 'loud'],
    ['CHAOS_JOBS', 'maybe'],
    ['JOB_TIMEOUT_MS', '-5'],
    ['IDEMPOTENCY_TTL_SECONDS', '0'],
    ['BATCH_MAX_ITEMS', '100001'],
  ])('refuses %s=%s and names the variable', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`${name}: `));
  });

  it('lists every bad variable at once', () => {
    try {
      loadConfig({ PORT: 'x', WORKER_PORT: 'y' });
      throw new Error('expected a ConfigError');
    } catch (error) {
      expect((error as ConfigError).problems.map((p) => p.split(':')[0]).sort()).toEqual(['PORT', 'WORKER_PORT']);
    }
  });

  it('refuses chaos jobs in production', () => {
    expect(() => loadConfig({ NODE_ENV: 'production', CHAOS_JOBS: 'true' })).toThrow(/CHAOS_JOBS/);
  });
});

describe('loadConfig security settings', () => {
  const key = 'k'.repeat(32);

  it('parses named and bare API keys', () => {
    const config = loadConfig({ API_KEYS: `ci=${key}, ${'x'.repeat(20)}` });
    expect(config.apiKeys).toEqual([
      { name: 'ci', key },
      { name: 'key-2', key: 'x'.repeat(20) },
    ]);
  });

  it('refuses short keys without echoing them', () => {
    expect(() => loadConfig({ API_KEYS: 'short-secret' })).toThrow(/API_KEYS: .*value hidden/);
    expect(() => loadConfig({ API_KEYS: 'short-secret' })).not.toThrow(/short-secret/);
    expect(() => loadConfig({ REDIS_URL: 'ftp://user:hunter2@host' })).not.toThrow(/hunter2/);
  });

  it('refuses duplicate key names', () => {
    expect(() => loadConfig({ API_KEYS: `a=${key},a=${key}x` })).toThrow(/unique/);
  });

  it('makes the API refuse to run open in production, unless told a gateway authenticates', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' }, 'api')).toThrow(/API_KEYS: required/);
    expect(loadConfig({ NODE_ENV: 'production', ALLOW_UNAUTHENTICATED: 'true' }, 'api').apiKeys).toEqual([]);
    expect(loadConfig({ NODE_ENV: 'production', API_KEYS: key }, 'api').apiKeys).toHaveLength(1);
    expect(loadConfig({ NODE_ENV: 'production' }, 'worker').env).toBe('production');
  });

  it('derives the rate-limit burst from the rate', () => {
    expect(loadConfig({ RATE_LIMIT_PER_MINUTE: '600' }).rateLimitBurst).toBe(60);
    expect(loadConfig({ RATE_LIMIT_PER_MINUTE: '600', RATE_LIMIT_BURST: '5' }).rateLimitBurst).toBe(5);
  });
});
