import { type Config, loadConfig } from './config';

/** The field names consumers read: Config is derived from the schema, so a rename there shows here. */
const FIELDS = [
  'env', 'queueRedis', 'cacheRedis', 'redisMinReplicasAck', 'cacheMemoryMb', 'redisPrefix', 'host', 'port', 'workerPort', 'workerThreads',
  'workerQueues', 'workerMaxMemoryMb', 'workerNice', 'workerSched', 'jobTimeoutMs', 'jobRetentionSeconds', 'deadLetterRetentionSeconds', 'jobListing', 'jobLockMs', 'shutdownTimeoutMs',
  'maxBacklog', 'maxWaitSeconds', 'idempotencyTtlSeconds', 'batchMaxItems', 'requestTimeoutMs', 'bodyLimit', 'logLevel', 'logFormat',
  'chaosJobs', 'demo', 'apiKeys', 'adminApiKeys', 'callerConcurrency', 'callerMaxQueued', 'callerLimits', 'rateLimitPerMinute', 'rateLimitBurst',
  'trustedProxies', 'trustedProxyHops', 'redisEvictionCheck', 'apiDocs',
  'queueDashboard', 'queueDashboardReadOnly', 'webhooks', 'otel', 'blobStore', 'uploadTtlSeconds',
] as const satisfies readonly (keyof Config)[];

// why a type as well: the field names at run time come from fieldOf, the types' from FieldOf; both must agree.
type Missing = Exclude<keyof Config, (typeof FIELDS)[number]>;
const noneMissing: [Missing] extends [never] ? true : Missing = true;

describe('Config fields', () => {
  it('are the variables under their camelCase names, and the composed ones', () => {
    expect(noneMissing).toBe(true);
    expect(Object.keys(loadConfig({ WORKER_QUEUES: 'default' })).sort()).toEqual([...FIELDS].sort());
  });

  it('freezes the lists a variable gives, and their entries', () => {
    const config = loadConfig({ WORKER_QUEUES: 'default,slow', TRUSTED_PROXIES: '10.0.0.0/8', API_KEYS: 'web=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08' });
    expect(config.workerQueues).toEqual(['default', 'slow']);
    for (const list of [config.workerQueues, config.trustedProxies, config.apiKeys, config.adminApiKeys]) {
      expect(Object.isFrozen(list)).toBe(true);
      expect(list!.every((entry) => Object.isFrozen(entry))).toBe(true);
    }
  });
});
