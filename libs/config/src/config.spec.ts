import { createHash } from 'node:crypto';
import { ConfigError, loadConfig } from './config';

describe('loadConfig', () => {
  it('applies documented defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      queueRedis: { kind: 'standalone', url: 'redis://127.0.0.1:6379', variable: 'REDIS_URL', tls: false },
      redisMinReplicasAck: 0,
      port: 3000,
      workerPort: 3001,
      bodyLimit: 5 * 1024 * 1024,
      logLevel: 'info',
      logFormat: 'auto',
      chaosJobs: false,
      idempotencyTtlSeconds: 86_400,
      batchMaxItems: 1000,
      workerNice: 19,
      workerSched: 'other',
    });
    expect(config.workerThreads).toBeGreaterThanOrEqual(1);
    expect(Object.isFrozen(config)).toBe(true);
    expect(config.cacheRedis).toBe(config.queueRedis);
  });

  it('reads sizes with units and keeps CACHE_REDIS_URL separate when given', () => {
    const config = loadConfig({ BODY_LIMIT: '512kb', CACHE_REDIS_URL: 'rediss://:secret@cache:6380/2', PORT: '8080' });
    expect(config.bodyLimit).toBe(512 * 1024);
    expect(config.cacheRedis).toMatchObject({ kind: 'standalone', url: 'rediss://:secret@cache:6380/2', variable: 'CACHE_REDIS_URL', tls: true });
    expect(config.queueRedis).toMatchObject({ kind: 'standalone', url: 'redis://127.0.0.1:6379' });
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
    ['LOG_FORMAT', 'yaml'],
    ['WORKER_SCHED', 'batch'],
    ['JOB_LISTING', 'no'],
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
  // Keys as `openssl rand -hex 32` and `openssl rand -base64 32` print them.
  const key = '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08';
  const other = 'q3Vd8xK2mZ7/tR+4bN1cW9eH6yJ0sL5fA8gU2iO7pE4=';

  it('parses named and bare API keys, a bare key named by its hash, wherever it is in the list', () => {
    const config = loadConfig({ API_KEYS: `ci=${key}, ${other}` });
    const name = `key-${createHash('sha256').update(other).digest('hex').slice(0, 12)}`;
    expect(config.apiKeys).toEqual([
      { name: 'ci', key },
      { name, key: other },
    ]);
    // Revoking the key before it leaves its name (and so its jobs) where it was.
    expect(loadConfig({ API_KEYS: other }).apiKeys).toEqual([{ name, key: other }]);
  });

  it('refuses keys of under 128 bits of estimated entropy, naming the variable and the key but never its value', () => {
    const weak = 'key-a-0123456789abcdef';
    expect(() => loadConfig({ API_KEYS: `ci=${key},alice=${weak}` })).toThrow(/API_KEYS: the key named "alice" is too weak/);
    expect(() => loadConfig({ API_KEYS: `ci=${key},alice=${weak}` })).not.toThrow(new RegExp(weak));
    expect(() => loadConfig({ API_KEYS: key, ADMIN_API_KEYS: `ops=${'a'.repeat(64)}` })).toThrow(/ADMIN_API_KEYS: the key named "ops" is too weak/);
    expect(() => loadConfig({ API_KEYS: 'a'.repeat(16) })).toThrow(/API_KEYS: the key named "key-[0-9a-f]{12}" is too weak/);
  });

  it('keeps admin keys apart from client keys', () => {
    const config = loadConfig({ API_KEYS: `web=${key}`, ADMIN_API_KEYS: `ops=${other}` });
    expect(config.apiKeys).toEqual([{ name: 'web', key }]);
    expect(config.adminApiKeys).toEqual([{ name: 'ops', key: other }]);
    expect(loadConfig({}).adminApiKeys).toEqual([]);
    expect(() => loadConfig({ API_KEYS: `web=${key}`, ADMIN_API_KEYS: `ops=${key}` })).toThrow(/ADMIN_API_KEYS: the key named "ops" is also one of API_KEYS/);
    expect(() => loadConfig({ ADMIN_API_KEYS: `ops=${key},ops=${other}` })).toThrow(/ADMIN_API_KEYS: key names must be unique/);
    expect(() => loadConfig({ ADMIN_API_KEYS: 'short-secret' })).toThrow(/ADMIN_API_KEYS: .*value hidden/);
  });

  it('reads TRUSTED_PROXIES as IPv4 and IPv6 ranges, naming it when an entry is not one', () => {
    expect(loadConfig({}).trustedProxies).toEqual([]);
    expect(loadConfig({ TRUSTED_PROXIES: '10.0.0.0/8, 192.0.2.7,fd00::/8' }).trustedProxies).toEqual([
      { address: '10.0.0.0', prefix: 8, family: 'ipv4' },
      { address: '192.0.2.7', prefix: 32, family: 'ipv4' },
      { address: 'fd00::', prefix: 8, family: 'ipv6' },
    ]);
    expect(() => loadConfig({ TRUSTED_PROXIES: '10.0.0.0/8,ingress.internal' })).toThrow(/TRUSTED_PROXIES: "ingress.internal" is not an IPv4 or IPv6 address or CIDR range/);
    expect(() => loadConfig({ TRUSTED_PROXIES: '10.0.0.0/33' })).toThrow(/TRUSTED_PROXIES: /);
  });

  it('refuses TRUST_PROXY_HOPS, which trusted any peer, pointing to TRUSTED_PROXIES', () => {
    expect(() => loadConfig({ TRUST_PROXY_HOPS: '1' })).toThrow(/TRUST_PROXY_HOPS: no longer read; list the addresses of your proxies in TRUSTED_PROXIES/);
    expect(loadConfig({ TRUST_PROXY_HOPS: '0' }).trustedProxies).toEqual([]);
  });

  it('refuses short keys without echoing them', () => {
    expect(() => loadConfig({ API_KEYS: 'short-secret' })).toThrow(/API_KEYS: .*value hidden/);
    expect(() => loadConfig({ API_KEYS: 'short-secret' })).not.toThrow(/short-secret/);
    const refusal = (() => {
      try {
        loadConfig({ REDIS_URL: 'ftp://user:hunter2@host' });
      } catch (error) {
        return (error as Error).message;
      }
      return 'accepted';
    })();
    expect(refusal).toMatch(/REDIS_URL/);
    expect(refusal).not.toMatch(/hunter2/);
  });

  it('refuses duplicate key names', () => {
    expect(() => loadConfig({ API_KEYS: `a=${key},a=${other}` })).toThrow(/unique/);
  });

  it('makes the API refuse to run open in production, unless told a gateway authenticates', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' }, 'api')).toThrow(/API_KEYS: required/);
    expect(loadConfig({ NODE_ENV: 'production', ALLOW_UNAUTHENTICATED: 'true' }, 'api').apiKeys).toEqual([]);
    expect(loadConfig({ NODE_ENV: 'production', API_KEYS: key }, 'api').apiKeys).toHaveLength(1);
    expect(loadConfig({ NODE_ENV: 'production' }, 'worker').env).toBe('production');
  });

  it('serves the API docs outside production by default, and in production only behind the keys', () => {
    expect(loadConfig({}).apiDocs).toBe(true);
    expect(loadConfig({ API_DOCS: 'false' }).apiDocs).toBe(false);
    expect(loadConfig({ NODE_ENV: 'production', API_KEYS: key }, 'api').apiDocs).toBe(false);
    expect(loadConfig({ NODE_ENV: 'production', API_KEYS: key, API_DOCS: 'true' }, 'api').apiDocs).toBe(true);
    expect(() => loadConfig({ NODE_ENV: 'production', ALLOW_UNAUTHENTICATED: 'true', API_DOCS: 'true' }, 'api')).toThrow(/API_DOCS: needs API_KEYS/);
  });

  it('serves the queue dashboard only when asked, read-only unless told otherwise, in production only to admin keys', () => {
    expect(loadConfig({})).toMatchObject({ queueDashboard: false, queueDashboardReadOnly: true });
    expect(loadConfig({ QUEUE_DASHBOARD: 'true', QUEUE_DASHBOARD_READONLY: 'false' })).toMatchObject({ queueDashboard: true, queueDashboardReadOnly: false });
    expect(() => loadConfig({ QUEUE_DASHBOARD: 'sure' })).toThrow(/QUEUE_DASHBOARD: /);
    expect(() => loadConfig({ NODE_ENV: 'production', ALLOW_UNAUTHENTICATED: 'true', QUEUE_DASHBOARD: 'true' }, 'api')).toThrow(/QUEUE_DASHBOARD: needs ADMIN_API_KEYS/);
    expect(() => loadConfig({ NODE_ENV: 'production', API_KEYS: key, QUEUE_DASHBOARD: 'true' }, 'api')).toThrow(/QUEUE_DASHBOARD: needs ADMIN_API_KEYS/);
    expect(loadConfig({ NODE_ENV: 'production', API_KEYS: key, ADMIN_API_KEYS: other, QUEUE_DASHBOARD: 'true' }, 'api').queueDashboard).toBe(true);
    // The worker shares the environment but never serves it, and has no keys.
    expect(loadConfig({ NODE_ENV: 'production', QUEUE_DASHBOARD: 'true' }, 'worker').queueDashboard).toBe(true);
  });

  it('derives the rate-limit burst from the rate', () => {
    expect(loadConfig({ RATE_LIMIT_PER_MINUTE: '600' }).rateLimitBurst).toBe(60);
    expect(loadConfig({ RATE_LIMIT_PER_MINUTE: '600', RATE_LIMIT_BURST: '5' }).rateLimitBurst).toBe(5);
  });

  describe('webhooks', () => {
    const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const on = { WEBHOOK_SECRET: secret, WEBHOOK_ALLOWED_HOSTS: 'Hooks.Example.com, 127.0.0.1:8080,[::1]:9000, bücher.example:443' };

    it('are off unless both the secret and the allowed hosts are set', () => {
      expect(loadConfig({}).webhooks).toBeUndefined();
      expect(() => loadConfig({ WEBHOOK_SECRET: secret })).toThrow(/WEBHOOK_SECRET and WEBHOOK_ALLOWED_HOSTS: set both/);
      expect(() => loadConfig({ WEBHOOK_ALLOWED_HOSTS: 'a.example' })).toThrow(/set both/);
    });

    it('normalize allowed hosts as WHATWG URL does, keeping ports', () => {
      const { webhooks } = loadConfig(on);
      expect(webhooks).toMatchObject({ secret, maxAttempts: 12, backoffMs: 5000, timeoutMs: 15_000, allowPrivateAddresses: false, schemes: ['http:', 'https:'] });
      expect(webhooks!.allowedHosts).toEqual([
        { host: 'hooks.example.com' },
        { host: '127.0.0.1', port: 8080 },
        { host: '[::1]', port: 9000 },
        { host: 'xn--bcher-kva.example', port: 443 },
      ]);
      expect(loadConfig({ ...on, NODE_ENV: 'production', API_KEYS: key }).webhooks!.schemes).toEqual(['https:']);
    });

    it.each([
      ['WEBHOOK_SECRET', 'not-a-secret'],
      ['WEBHOOK_SECRET', `whsec_${Buffer.alloc(8).toString('base64')}`],
      ['WEBHOOK_ALLOWED_HOSTS', 'https://hooks.example.com'],
      ['WEBHOOK_ALLOWED_HOSTS', '*.example.com'],
      ['WEBHOOK_ALLOWED_HOSTS', 'hooks.example.com:0'],
      ['WEBHOOK_ALLOWED_HOSTS', 'user@hooks.example.com'],
      ['WEBHOOK_ALLOWED_HOSTS', ' , '],
      ['WEBHOOK_MAX_ATTEMPTS', '0'],
    ])('refuse %s=%s, naming the variable', (name, value) => {
      expect(() => loadConfig({ ...on, [name]: value })).toThrow(new RegExp(`${name}: `));
    });

    it('never echo the secret', () => {
      expect(() => loadConfig({ ...on, WEBHOOK_SECRET: 'whsec_short' })).toThrow(/value hidden/);
    });
  });
});

describe('loadConfig tracing settings', () => {
  it('is off without an endpoint', () => {
    expect(loadConfig({}).otel).toEqual({ endpoint: undefined, headers: {}, serviceName: undefined, sampleRatio: 1 });
  });

  it('reads the standard OpenTelemetry variables', () => {
    const config = loadConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      OTEL_EXPORTER_OTLP_HEADERS: 'api-key=abc%3D%3D, x-team = core',
      OTEL_SERVICE_NAME: 'jobs-api',
    });
    expect(config.otel).toEqual({ endpoint: 'http://collector:4318', headers: { 'api-key': 'abc==', 'x-team': 'core' }, serviceName: 'jobs-api', sampleRatio: 1 });
  });

  it('samples a ratio of requests only with the parent-based trace-id-ratio sampler', () => {
    expect(loadConfig({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' }).otel.sampleRatio).toBe(0.25);
    expect(loadConfig({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio' }).otel.sampleRatio).toBe(1);
    expect(loadConfig({ OTEL_TRACES_SAMPLER_ARG: '0.25' }).otel.sampleRatio).toBe(1);
  });

  it.each([
    ['OTEL_EXPORTER_OTLP_ENDPOINT', 'collector:4318'],
    ['OTEL_EXPORTER_OTLP_ENDPOINT', 'grpc://collector:4317'],
    ['OTEL_EXPORTER_OTLP_HEADERS', 'no-value'],
    ['OTEL_TRACES_SAMPLER', 'always_on'],
    ['OTEL_TRACES_SAMPLER_ARG', '1.5'],
  ])('refuses %s=%s', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`${name}: `));
  });

  it('does not echo the exporter headers, which carry credentials', () => {
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_HEADERS: 'secret-token' })).toThrow(/value hidden/);
  });
});

describe('loadConfig Redis topologies', () => {
  it('reads a Sentinel set, its credentials and TLS, and shares it with the cache', () => {
    const config = loadConfig({
      REDIS_SENTINELS: 'sentinel-0.redis:26379, sentinel-1.redis:26379,[::1]:26380',
      REDIS_SENTINEL_NAME: 'mymaster',
      REDIS_USERNAME: 'app',
      REDIS_PASSWORD: 'hunter2',
      REDIS_TLS: 'true',
    });
    expect(config.queueRedis).toEqual({
      kind: 'sentinel',
      name: 'mymaster',
      sentinels: [
        { host: 'sentinel-0.redis', port: 26379 },
        { host: 'sentinel-1.redis', port: 26379 },
        { host: '::1', port: 26380 },
      ],
      variable: 'REDIS_SENTINELS',
      username: 'app',
      password: 'hunter2',
      tls: true,
    });
    expect(config.cacheRedis).toBe(config.queueRedis);
    expect(Object.isFrozen(config.queueRedis)).toBe(true);
    expect(config.queueRedis.kind === 'sentinel' && Object.isFrozen(config.queueRedis.sentinels[0])).toBe(true);
  });

  it('reads cluster seeds, and a cache of another topology', () => {
    const config = loadConfig({
      REDIS_CLUSTER_NODES: '10.0.0.1:6379,10.0.0.2:6379',
      CACHE_REDIS_SENTINELS: 'cache-sentinel:26379',
      CACHE_REDIS_SENTINEL_NAME: 'cache',
      REDIS_PASSWORD: 'pw',
    });
    expect(config.queueRedis).toMatchObject({ kind: 'cluster', nodes: [{ host: '10.0.0.1', port: 6379 }, { host: '10.0.0.2', port: 6379 }], variable: 'REDIS_CLUSTER_NODES', password: 'pw' });
    expect(config.cacheRedis).toMatchObject({ kind: 'sentinel', name: 'cache', variable: 'CACHE_REDIS_SENTINELS', password: 'pw' });
    expect(loadConfig({ CACHE_REDIS_CLUSTER_NODES: 'c:7000' }).cacheRedis).toMatchObject({ kind: 'cluster', variable: 'CACHE_REDIS_CLUSTER_NODES' });
  });

  it('gives a URL without credentials REDIS_USERNAME and REDIS_PASSWORD, and keeps the credentials a URL has', () => {
    const bare = loadConfig({ REDIS_URL: 'redis://queue:6379', REDIS_USERNAME: 'app', REDIS_PASSWORD: 'from-secret' });
    expect(bare.queueRedis).toMatchObject({ kind: 'standalone', username: 'app', password: 'from-secret', tls: false });
    const own = loadConfig({ REDIS_URL: 'rediss://:in-url@queue:6379', REDIS_PASSWORD: 'from-secret' });
    expect(own.queueRedis).toMatchObject({ tls: true });
    expect(own.queueRedis.password).toBeUndefined();
    expect(loadConfig({ REDIS_TLS: 'true' }).queueRedis.tls).toBe(true);
  });

  it('reads REDIS_MIN_REPLICAS_ACK', () => {
    expect(loadConfig({ REDIS_MIN_REPLICAS_ACK: '2' }).redisMinReplicasAck).toBe(2);
    expect(() => loadConfig({ REDIS_MIN_REPLICAS_ACK: 'all' })).toThrow(/REDIS_MIN_REPLICAS_ACK: /);
  });

  it.each([
    [{ REDIS_URL: 'redis://a:6379', REDIS_SENTINELS: 's:26379', REDIS_SENTINEL_NAME: 'm' }, /REDIS_URL: set together with REDIS_SENTINELS/],
    [{ REDIS_URL: 'redis://a:6379', REDIS_CLUSTER_NODES: 'c:7000' }, /REDIS_URL: set together with REDIS_CLUSTER_NODES/],
    [{ REDIS_SENTINELS: 's:26379', REDIS_SENTINEL_NAME: 'm', REDIS_CLUSTER_NODES: 'c:7000' }, /REDIS_SENTINELS: set together with REDIS_CLUSTER_NODES/],
    [{ REDIS_SENTINELS: 's:26379' }, /REDIS_SENTINEL_NAME: required with REDIS_SENTINELS/],
    [{ REDIS_SENTINEL_NAME: 'm' }, /REDIS_SENTINEL_NAME: set without REDIS_SENTINELS/],
    [{ REDIS_SENTINELS: 's:26379,t', REDIS_SENTINEL_NAME: 'm' }, /REDIS_SENTINELS: must be comma-separated host:port pairs \(got "s:26379,t"\)/],
    [{ REDIS_CLUSTER_NODES: 'c:99999' }, /REDIS_CLUSTER_NODES: ports must be 1-65535/],
    [{ REDIS_CLUSTER_NODES: ' , ' }, /REDIS_CLUSTER_NODES: must name at least one host:port/],
    [{ REDIS_CLUSTER_NODES: 'http://c:7000' }, /REDIS_CLUSTER_NODES: must be comma-separated host:port pairs/],
    [{ CACHE_REDIS_URL: 'redis://c:6379', CACHE_REDIS_CLUSTER_NODES: 'c:7000' }, /CACHE_REDIS_URL: set together with CACHE_REDIS_CLUSTER_NODES/],
    [{ CACHE_REDIS_SENTINELS: 's:26379' }, /CACHE_REDIS_SENTINEL_NAME: required with CACHE_REDIS_SENTINELS/],
    [{ REDIS_SENTINELS: 's:26379', REDIS_SENTINEL_NAME: 'my master' }, /REDIS_SENTINEL_NAME: must be 1-128 printable characters/],
  ])('refuses %j, naming the variable', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });

  it('never echoes REDIS_PASSWORD', () => {
    expect(() => loadConfig({ REDIS_PASSWORD: 'x'.repeat(5000) })).toThrow(/REDIS_PASSWORD: .*value hidden/);
  });
});
